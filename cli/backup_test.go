package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// backupFake adds backup, restore and leadership transfer to fakeController.
type backupFake struct {
	*fakeController
	backup   []byte // what Backup streams, in 3-byte chunks
	failMid  bool   // Backup breaks off after the first chunk
	restored []byte // what Restore received
	force    bool
	transfer []string
}

func (f *backupFake) Backup(_ *phalanxv1.BackupRequest, stream phalanxv1.ControllerService_BackupServer) error {
	for off := 0; off < len(f.backup); off += 3 {
		if err := stream.Send(&phalanxv1.Chunk{Data: f.backup[off:min(off+3, len(f.backup))]}); err != nil {
			return err
		}
		if f.failMid {
			return status.Error(codes.Internal, "disk read error")
		}
	}
	return nil
}

func (f *backupFake) Restore(stream phalanxv1.ControllerService_RestoreServer) error {
	f.restored = nil
	for first := true; ; first = false {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if first {
			f.force = msg.Force
		}
		f.restored = append(f.restored, msg.Data...)
	}
	if !f.force {
		return status.Error(codes.Aborted, "this cluster holds 3 jobs: restoring a backup replaces everything; restore into a new cluster, or force it")
	}
	return stream.SendAndClose(&phalanxv1.RestoreResponse{Jobs: 5, Nodes: 2})
}

func (f *backupFake) TransferLeadership(_ context.Context, req *phalanxv1.TransferLeadershipRequest) (*phalanxv1.TransferLeadershipResponse, error) {
	f.transfer = append(f.transfer, req.Id)
	if req.Id == "" {
		return &phalanxv1.TransferLeadershipResponse{LeaderId: "ctl2"}, nil
	}
	return &phalanxv1.TransferLeadershipResponse{LeaderId: req.Id}, nil
}

func startBackupFake(t *testing.T) (*backupFake, string) {
	f := &backupFake{fakeController: &fakeController{}}
	return f, serveFake(t, f)
}

func TestScontrolBackup(t *testing.T) {
	f, addr := startBackupFake(t)
	f.backup = []byte("a state database of some bytes")
	dir := t.TempDir()
	file := filepath.Join(dir, "state.backup")
	code, stdout, stderr := runOut(t, addr, "scontrol", "backup", file)
	if code != 0 || stderr != "" || stdout != "Backup of 30 bytes written to "+file+"\n" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, f.backup) {
		t.Fatalf("backup file %q (%v); want %q", got, err, f.backup)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("backup file mode %v (%v); want 0600: it holds every job's script and environment", st.Mode().Perm(), err)
	}

	// A backup that breaks off leaves no file under the name.
	f.failMid = true
	torn := filepath.Join(dir, "torn.backup")
	code, stdout, stderr = runOut(t, addr, "scontrol", "backup", torn)
	if code != 1 || stdout != "" || stderr != "scontrol: error: the controller at "+addr+": disk read error (Internal)\n" {
		t.Fatalf("broken backup: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after a broken backup the directory holds %v; want only the first backup", entries)
	}

	code, _, stderr = runOut(t, addr, "scontrol", "backup")
	if code != 1 || stderr != "scontrol: error: write scontrol backup FILE\n" {
		t.Fatalf("no file: code %d, stderr %q", code, stderr)
	}
	code, _, stderr = runOut(t, addr, "scontrol", "backup", dir+"/")
	if want := "scontrol: error: " + dir + "/ is a directory: give the backup's file name, e.g. " + dir + "/phalanx-"; code != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("a directory: code %d, stderr %q; want %q...", code, stderr, want)
	}
}

func TestScontrolRestore(t *testing.T) {
	f, addr := startBackupFake(t)
	file := filepath.Join(t.TempDir(), "state.backup")
	data := bytes.Repeat([]byte("0123456789"), 300000) // 3 MB: several messages
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runOut(t, addr, "scontrol", "restore", file)
	if code != 1 || stdout != "" || !strings.HasPrefix(stderr, "scontrol: error: this cluster holds 3 jobs: ") {
		t.Fatalf("unforced: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runOut(t, addr, "scontrol", "restore", file, "force")
	if code != 0 || stderr != "" || stdout != "State restored from "+file+": 5 jobs, 2 nodes\n" {
		t.Fatalf("forced: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !f.force || !bytes.Equal(f.restored, data) {
		t.Errorf("the controller received %d bytes (force %v); want the file's %d", len(f.restored), f.force, len(data))
	}
	for _, args := range [][]string{{"restore"}, {"restore", file, "now"}} {
		code, _, stderr := runOut(t, addr, append([]string{"scontrol"}, args...)...)
		if code != 1 || !strings.HasPrefix(stderr, "scontrol: error: write scontrol restore FILE [force]") {
			t.Errorf("%q: code %d, stderr %q", args, code, stderr)
		}
	}
	code, _, stderr = runOut(t, addr, "scontrol", "restore", file+".missing")
	if code != 1 || !strings.Contains(stderr, "no such file") {
		t.Errorf("missing file: code %d, stderr %q", code, stderr)
	}
}

func TestScontrolRaftTransfer(t *testing.T) {
	f, addr := startBackupFake(t)
	code, stdout, stderr := runOut(t, addr, "scontrol", "raft", "transfer")
	if code != 0 || stderr != "" || stdout != "Controller ctl2 leads\n" {
		t.Fatalf("transfer: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = runOut(t, addr, "scontrol", "raft", "transfer", "ctl3")
	if code != 0 || stdout != "Controller ctl3 leads\n" {
		t.Fatalf("transfer ctl3: code %d, stdout %q", code, stdout)
	}
	code, _, stderr = runOut(t, addr, "scontrol", "raft", "transfer", "ctl3", "ctl4")
	if code != 1 || stderr != "scontrol: error: raft transfer takes at most one controller ID: write scontrol raft transfer [ID]\n" {
		t.Fatalf("two IDs: code %d, stderr %q", code, stderr)
	}
	if want := []string{"", "ctl3"}; strings.Join(f.transfer, ",") != strings.Join(want, ",") {
		t.Errorf("transfers sent %q; want %q", f.transfer, want)
	}
}
