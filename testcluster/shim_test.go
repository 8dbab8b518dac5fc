package testcluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// The agents' plain-process tasks run under phalanx-shim (testcluster.Shim,
// which TestMain builds), as on a node where it is installed beside
// phalanx-agent: a job runs as its user, supervised by that binary.
func TestTasksRunUnderPhalanxShim(t *testing.T) {
	user := localUser(t, "phxshim")
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "process"})
	dir := userDir(t, user)
	script := "#!/bin/sh\n#SBATCH -N 1 -o shim-%j.out\nid -un\nsleep 60\n"
	if err := os.WriteFile(filepath.Join(dir, "job.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	id, jobID := sbatchAs(t, c, user, dir, "job.sh")
	if job := c.WaitJob(jobID, 30*time.Second, "RUNNING"); job.State != "RUNNING" {
		t.Fatalf("job %s: %s", id, job.State)
	}
	var exe string
	for deadline := time.Now().Add(10 * time.Second); exe == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, exe = runtimetest.ProcessExe("phalanx-shim\x00phx-" + id + "-")
	}
	if exe != testcluster.Shim || exe == "" {
		t.Errorf("job %s's supervisor runs %q, want phalanx-shim at %s", id, exe, testcluster.Shim)
	}
	outFile := filepath.Join(dir, "shim-"+id+".out")
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got, _ = os.ReadFile(outFile)
	}
	if strings.TrimSpace(string(got)) != user.User {
		t.Errorf("the job ran as %q, want %s", got, user.User)
	}
	if code, _, errOut := phxAs(t, c, user, dir, nil, "scancel", id); code != 0 {
		t.Fatalf("scancel: exit %d: %s", code, errOut)
	}
	if job := c.WaitJob(jobID, 30*time.Second, "CANCELLED"); job.State != "CANCELLED" {
		t.Errorf("job %s after scancel: %s", id, job.State)
	}
}
