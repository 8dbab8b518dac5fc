package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// TestArgv0Dispatch runs phx as if through a symlink named squeue.
func TestArgv0Dispatch(t *testing.T) {
	f, addr := startFake(t)
	sys, stdout, stderr := testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"/x/squeue", "-u", "alice,bob", "-p", "gpu"}); code != 0 {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	want := "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n" +
		"                 7       gpu    train    alice  R       1:00      1 gpu001\n"
	if stdout.String() != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	sent := &phalanxv1.ListJobsRequest{Users: []string{"alice", "bob"}, Partitions: []string{"gpu"}}
	if len(f.lists) != 1 || !proto.Equal(f.lists[0], sent) {
		t.Fatalf("sent %v, want %v", f.lists, sent)
	}
}

// TestMainDispatch goes through Main and the process environment.
func TestMainDispatch(t *testing.T) {
	f, addr := startFake(t)
	t.Setenv("PHX_SERVER", addr)
	t.Setenv("PHX_INSECURE", "1") // the fake server is plaintext
	t.Setenv("PHX_TOKEN", testCredential)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the leader hint goes there, not in the real home
	if code := Main([]string{"/x/squeue", "-h", "-j", "7"}); code != 0 {
		t.Fatalf("Main: code %d", code)
	}
	if len(f.lists) != 1 || !slices.Equal(f.lists[0].JobIds, []uint64{7}) {
		t.Fatalf("sent %v", f.lists)
	}
	if code := Main([]string{"/x/sbatch", "--no-such-option"}); code != 1 {
		t.Fatalf("Main with a bad option: code %d, want 1", code)
	}
}

func TestSqueueRequests(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want *phalanxv1.ListJobsRequest
	}{
		{[]string{"--me"}, &phalanxv1.ListJobsRequest{Users: []string{"alice"}}},
		{[]string{"-t", "PD,r"}, &phalanxv1.ListJobsRequest{States: []string{"PENDING", "RUNNING"}}},
		{[]string{"--states=CD,running"}, &phalanxv1.ListJobsRequest{States: []string{"COMPLETED", "RUNNING"}, IncludeFinished: true}},
		{[]string{"-t", "all"}, &phalanxv1.ListJobsRequest{IncludeFinished: true}},
		// Slurm's states that no Phalanx job is in are taken, and select none.
		{[]string{"-t", "suspended,BF,,cg"}, &phalanxv1.ListJobsRequest{States: []string{"SUSPENDED", "BOOT_FAIL", "COMPLETING"}}},
		{[]string{"-j", "7,8"}, &phalanxv1.ListJobsRequest{JobIds: []uint64{7, 8}}},
		{[]string{"--start", "-t", "all", "-u", "bob"}, &phalanxv1.ListJobsRequest{Users: []string{"bob"}, States: []string{"PENDING"}}},
		{[]string{"-n", "train,eval", "--name=sweep"}, &phalanxv1.ListJobsRequest{Names: []string{"train", "eval", "sweep"}}},
	} {
		f, addr := startFake(t)
		sys, _, stderr := testSystem(t, addr)
		if code := Run(context.Background(), sys, append([]string{"squeue"}, tc.args...)); code != 0 {
			t.Fatalf("%v: code %d, stderr %q", tc.args, code, stderr)
		}
		if len(f.lists) != 1 || !proto.Equal(f.lists[0], tc.want) {
			t.Errorf("%v: sent %v, want %v", tc.args, f.lists, tc.want)
		}
	}
}

func TestScancel(t *testing.T) {
	f, addr := startFake(t)
	sys, stdout, stderr := testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"phx", "scancel", "7", "8"}); code != 0 || stdout.Len()+stderr.Len() != 0 {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	sys, _, _ = testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"scancel", "--me", "-n", "train"}); code != 0 {
		t.Fatalf("scancel --me: code %d", code)
	}
	sys, _, _ = testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"scancel", "-t", "PD,r", "-p", "gpu", "9"}); code != 0 {
		t.Fatalf("scancel -t -p: code %d", code)
	}
	sys, _, stderr = testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"scancel", "-t", "SLEEPING", "-u", "bob"}); code != 1 || !strings.Contains(stderr.String(), "scancel: error: Invalid job state specified: SLEEPING") {
		t.Errorf("scancel -t SLEEPING: code %d, stderr %q", code, stderr)
	}
	sys, _, stderr = testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"scancel", "-u", "nosuch", "-n", "x"}); code != 1 || stderr.String() != "scancel: error: Invalid user name: nosuch\n" {
		t.Errorf("scancel -u nosuch: code %d, stderr %q; want Slurm's Invalid user name, status 1", code, stderr)
	}
	want := []*phalanxv1.CancelJobRequest{{JobIds: []uint64{7}}, {JobIds: []uint64{8}}, {User: "alice", Name: "train"},
		{JobIds: []uint64{9}, States: []string{"PENDING", "RUNNING"}, Partitions: []string{"gpu"}}}
	if len(f.cancels) != len(want) {
		t.Fatalf("sent %v", f.cancels)
	}
	seen := map[string]bool{}
	for i := range want {
		// Each cancel carries its own request ID (exactly-once retries).
		sent := proto.Clone(f.cancels[i]).(*phalanxv1.CancelJobRequest)
		if len(sent.RequestId) != 32 || seen[sent.RequestId] {
			t.Errorf("cancel %d: request ID %q; want 32 hex digits, one per cancel", i, sent.RequestId)
		}
		seen[sent.RequestId] = true
		sent.RequestId = ""
		if !proto.Equal(sent, want[i]) {
			t.Errorf("cancel %d: sent %v, want %v", i, sent, want[i])
		}
	}
}

// scancel -v with filters only says each job it terminates, as Slurm's
// does; without -v it says nothing.
func TestScancelVerboseWithFilters(t *testing.T) {
	_, addr := startFake(t)
	sys, stdout, stderr := testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"scancel", "-v", "-n", "vv"}); code != 0 || stdout.Len() != 0 ||
		stderr.String() != "scancel: Terminating job 41\nscancel: Terminating job 42\n" {
		t.Errorf("scancel -v -n vv: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	sys, stdout, stderr = testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"scancel", "-n", "vv"}); code != 0 || stdout.Len()+stderr.Len() != 0 {
		t.Errorf("scancel -n vv: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestScontrolShowJob(t *testing.T) {
	_, addr := startFake(t)
	sys, stdout, stderr := testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"scontrol", "show", "job", "7"}); code != 0 {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	if !strings.HasPrefix(stdout.String(), "JobId=7 JobName=train\n   UserId=alice(0)") ||
		!strings.Contains(stdout.String(), "   JobState=RUNNING Reason=None Dependency=(null)\n") {
		t.Fatalf("stdout:\n%s", stdout)
	}
}

func TestInstallLinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/old/phx", filepath.Join(dir, "squeue")); err != nil {
		t.Fatal(err)
	}
	sys, stdout, stderr := testSystem(t, "127.0.0.1:1")
	if code := Run(context.Background(), sys, []string{"phx", "install-links", dir}); code != 0 {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	for _, name := range []string{"sbatch", "squeue", "sinfo", "scancel", "scontrol", "srun", "sacct"} {
		got, err := os.Readlink(filepath.Join(dir, name))
		if err != nil || got != "/opt/phalanx/bin/phx" {
			t.Errorf("%s -> %q (%v), want /opt/phalanx/bin/phx", name, got, err)
		}
		if !strings.Contains(stdout.String(), filepath.Join(dir, name)+" -> /opt/phalanx/bin/phx\n") {
			t.Errorf("stdout does not report %s:\n%s", name, stdout)
		}
	}

	// A regular file is never replaced, and then nothing is changed.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "sinfo"), []byte("real sinfo"), 0o755); err != nil {
		t.Fatal(err)
	}
	sys, _, stderr = testSystem(t, "127.0.0.1:1")
	if code := Run(context.Background(), sys, []string{"phx", "install-links", other}); code != 1 ||
		!strings.Contains(stderr.String(), "install-links: error: refusing to replace "+filepath.Join(other, "sinfo")) {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	if data, _ := os.ReadFile(filepath.Join(other, "sinfo")); string(data) != "real sinfo" {
		t.Error("sinfo was overwritten")
	}
	if _, err := os.Lstat(filepath.Join(other, "sbatch")); err == nil {
		t.Error("sbatch was linked although install-links failed")
	}

	// A directory that is not there: one line, without the temporary link.
	missing := filepath.Join(t.TempDir(), "bin")
	sys, _, stderr = testSystem(t, "127.0.0.1:1")
	want := "install-links: error: directory " + missing + " does not exist: create it first (mkdir -p " + missing + ")\n"
	if code := Run(context.Background(), sys, []string{"phx", "install-links", missing}); code != 1 || stderr.String() != want {
		t.Fatalf("code %d, stderr %q, want %q", code, stderr, want)
	}
}

// TestLinkError: a link that cannot be made is named, not the temporary
// link install-links goes through.
func TestLinkError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&os.LinkError{Op: "symlink", Old: "/bin/phx", New: "/d/sbatch.phx-new", Err: syscall.EACCES},
			"cannot create /d/sbatch: permission denied (run it as a user who may write /d)"},
		{&os.LinkError{Op: "rename", Old: "/d/sbatch.phx-new", New: "/d/sbatch", Err: syscall.EROFS},
			"cannot create /d/sbatch: read-only file system"},
	} {
		if got := linkError("/d/sbatch", tc.err).Error(); got != tc.want {
			t.Errorf("linkError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestSlurmNamesDocumented: docs/cli.md's "Slurm names" names every link
// install-links creates.
func TestSlurmNamesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Slurm names\n")
	section, _, _ = strings.Cut(section, "\n```")
	for _, name := range slurmNames {
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("docs/cli.md, Slurm names: %s is not listed:\n%s", name, section)
		}
	}
}

func TestResolveAddrs(t *testing.T) {
	conf := []byte("# phalanx.conf\nClusterName=c\nSlurmctldHost=ctl1(10.0.0.1)\nSlurmctldHost=ctl2(10.0.0.2)\n")
	for _, tc := range []struct {
		flag, env string
		conf      []byte
		want      string
	}{
		{"a:1", "b:2", conf, "a:1"},
		{"a:1,c", "b:2", conf, "a:1,c:7817"},
		{"", "b:2", conf, "b:2"},
		{"", "b, d:9 ,", conf, "b:7817,d:9"},
		{"", "", conf, "10.0.0.1:7817,10.0.0.2:7817"},
		{"", "", []byte("SlurmctldPort=7000\nSlurmctldHost=ctl1(10.0.0.1)\nControllerHost=ctl2\n"), "10.0.0.1:7000,ctl2:7000"},
		{"", "", []byte("slurmctldhost=ctl9 # comment\n"), "ctl9:7817"},
		{"", "", []byte("ControllerAddr=ctl.example:9000\n"), "ctl.example:9000"},
		{"", "", []byte("ControllerHost=c3(c3.example:7000) ClusterName=x\n"), "c3.example:7000"},
		{"", "", nil, "localhost:7817"},
		{"", "", []byte("NodeName=n1\n"), "localhost:7817"},
		{"[::1]", "", nil, "[::1]:7817"},
	} {
		if got := strings.Join(ResolveAddrs(tc.flag, tc.env, tc.conf), ","); got != tc.want {
			t.Errorf("ResolveAddrs(%q, %q, %q) = %q, want %q", tc.flag, tc.env, tc.conf, got, tc.want)
		}
	}
}

func TestServerFlag(t *testing.T) {
	f, addr := startFake(t)
	sys, _, stderr := testSystem(t, "127.0.0.1:1") // PHX_SERVER is wrong; --server wins
	if code := Run(context.Background(), sys, []string{"phx", "--server", addr, "--timeout", "5s", "squeue"}); code != 0 {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	if len(f.lists) != 1 {
		t.Fatalf("the server named by --server got %d calls", len(f.lists))
	}
}
