package testcluster_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/testcluster"
)

// phx logs prints a task's output as its node's agent reads it: its owner
// sees it, following a running task to its end, on any node of the job,
// stdout or stderr; another user is refused.
func TestPhxLogs(t *testing.T) {
	alice, bob := localUser(t, "phxlogsa"), localUser(t, "phxlogsb")
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2, Runtime: "process"})
	dir := userDir(t, alice)
	// The output lives in a directory of each node's own (as on a node's
	// local disk): only its agent can read it for phx.
	script := `#!/bin/sh
#SBATCH -N 2 --gpus-per-node=8 -o out/%n/log -e out/%n/err
for i in 1 2 3 4 5 6; do echo "rank $SLURM_NODEID line $i"; sleep 0.5; done
echo "oops $SLURM_NODEID" >&2
`
	for rank := range 2 {
		if err := os.MkdirAll(filepath.Join(dir, "out", strconv.Itoa(rank)), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(filepath.Join(dir, "out", strconv.Itoa(rank)), int(alice.UID), int(alice.GID))
	}
	os.Chown(filepath.Join(dir, "out"), int(alice.UID), int(alice.GID))
	if err := os.WriteFile(filepath.Join(dir, "logs.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	id, jobID := sbatchAs(t, c, alice, dir, "logs.sh")
	c.WaitJob(jobID, 20*time.Second, "RUNNING")

	// -f while it runs: every line, then phx exits as the task ends.
	code, out, errOut := phxAs(t, c, alice, dir, nil, "logs", "-f", id, "--task", "1")
	var want strings.Builder
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&want, "rank 1 line %d\n", i)
	}
	if code != 0 || out != want.String() {
		t.Errorf("phx logs -f %s --task 1: exit %d, %q (stderr %q); want %q", id, code, out, errOut, want.String())
	}
	if job := c.WaitJob(jobID, 20*time.Second, "COMPLETED", "FAILED"); job.State != "COMPLETED" {
		t.Fatalf("job ended %s", job.State)
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string // prefix of stdout, or of stderr when code != 0
	}{
		{[]string{"logs", id}, 0, "rank 0 line 1\nrank 0 line 2\n"},
		{[]string{"logs", "--err", id, "-t", "1"}, 0, "oops 1\n"},
		{[]string{"logs", "--tail", "14", id}, 0, "rank 0 line 6\n"},
		{[]string{"logs", id, "--task", "2"}, 1, "logs: error: job " + id + " has tasks 0 to 1: no task 2"},
		{[]string{"logs", "999999"}, 1, "logs: error: Invalid job id specified: 999999"},
	} {
		code, out, errOut := phxAs(t, c, alice, dir, nil, tc.args...)
		got := out
		if code != 0 {
			got = errOut
		}
		if code != tc.code || !strings.HasPrefix(got, tc.out) || (tc.args[1] == "--tail" && got != tc.out) {
			t.Errorf("phx %v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.out)
		}
	}
	code, _, errOut = phxAs(t, c, bob, userDir(t, bob), nil, "logs", id)
	if code == 0 || !strings.Contains(errOut, "permission denied") {
		t.Errorf("bob's phx logs of alice's job: exit %d, %q; want permission denied", code, errOut)
	}

	// A task of an array, by ARRAYID_INDEX.
	array, arrayID := sbatchAs(t, c, alice, dir, "--array=0-1", "-N", "1", "--gpus-per-node=8", "-o", "arr-%A_%a.out", "--wrap", "echo task $SLURM_ARRAY_TASK_ID")
	c.WaitJob(arrayID+1, 20*time.Second, "COMPLETED")
	if code, out, errOut = phxAs(t, c, alice, dir, nil, "logs", array+"_1"); code != 0 || out != "task 1\n" {
		t.Errorf("phx logs %s_1: exit %d, stdout %q, stderr %q; want task 1", array, code, out, errOut)
	}

	// The agent opens the file as the job's owner: a job that names a
	// file its owner may not read gets no byte of it.
	shadow, shadowID := sbatchAs(t, c, alice, dir, "-N", "1", "--gpus-per-node=8", "-o", "/etc/shadow", "--wrap", "true")
	c.WaitJob(shadowID, 20*time.Second, "FAILED", "COMPLETED", "NODE_FAIL", "CANCELLED")
	code, out, errOut = phxAs(t, c, alice, dir, nil, "logs", shadow)
	if code == 0 || out != "" || !strings.Contains(errOut, "permission denied") {
		t.Errorf("phx logs of a job with -o /etc/shadow: exit %d, stdout %q, stderr %q; want permission denied and nothing", code, out, errOut)
	}
}
