package testcluster_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// A controller host serves its local users as a node's agent does: the
// auth socket, and the CLI server beside it, so that a phx with no
// phx-full beside it (which can run only what a CLI server runs) submits
// there as its user.
func TestControllerHostServesPhx(t *testing.T) {
	alice := localUser(t, "phxalice")
	aliceDir := userDir(t, alice)
	front := frontOnly(t)
	run := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(run, 0o755)
	for d := run; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	authSock := filepath.Join(run, "auth.sock")
	procs := testcluster.StartProcs(t, testcluster.BuildController(t, t.TempDir()), testcluster.ProcOptions{Replicas: 1,
		ReplicaArgs: func(int) []string { return []string{"--auth-socket", authSock} }})
	if _, err := procs.WaitLeader(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	procs.StartAgents(1, 8)
	conn, err := procs.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := phalanxv1.NewControllerServiceClient(conn)
	for i := 0; ; i++ {
		if nodes, err := api.ListNodes(context.Background(), &phalanxv1.ListNodesRequest{}); err == nil && len(nodes.Nodes) == 1 {
			break
		}
		if i == 100 {
			t.Fatal("the agent did not register in 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	log := func() string {
		b, _ := os.ReadFile(filepath.Join(procs.Dir, procs.Replicas[0].ID+".log"))
		return string(b)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(run, "cli.sock")); err == nil {
			break
		}
		if i == 100 {
			t.Fatalf("phalanx-controller --auth-socket serves no cli.sock after 10 s:\n%s", log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd := exec.Command(front, "sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true")
	cmd.Dir = aliceDir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + aliceDir, "USER=" + alice.User, "PHX_SERVER=" + strings.Join(procs.APIAddrs(), ","),
		"PHX_AUTH_SOCKET=" + authSock, "PHX_CA_CERT=" + filepath.Join(procs.TLSDir(0), "ca.crt")} // the host's CA file
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: alice.UID, Gid: alice.GID}}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("alice's sbatch on the controller host: %v: %s\ncontroller:\n%s", err, errOut.String(), log())
	}
	id, _ := strconv.ParseUint(strings.TrimSpace(out.String()), 10, 64)
	j, err := api.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
	if err != nil || j.GetSpec().GetUser() != "phxalice" {
		t.Errorf("the job submitted on the controller host: user %q, %v", j.GetSpec().GetUser(), err)
	}
}
