package testcluster_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// A task its agent cannot see gone UnkillableStepTimeout after its SIGKILL
// (in production a process stuck in the kernel; here its supervisor is
// stopped, so that the end of its process group is never recorded) drains
// its node with Slurm's "Kill task failed", and the job still ends: a
// cancelled job is CANCELLED, and the next job runs on the other node, not
// on GPUs the stuck task may hold.
func TestUnkillableTaskDrainsNode(t *testing.T) {
	dir := runtimetest.SharedDir(t)
	c, phx := healthClusterWith(t, testcluster.Options{Runtime: "process", Unkillable: cluster.Unkillable{Timeout: time.Second}})
	shimFile := filepath.Join(dir, "shim")
	id := submit(t, c, spec(dir, "stuck", 1, 8, "#!/bin/sh\necho $PPID > "+shimFile+"\nexec sleep 300\n"))
	j := c.WaitJob(id, 20*time.Second, "RUNNING")
	stuck := j.Alloc[0].Node
	var shim int
	c.Eventually(10*time.Second, func() error {
		b, err := os.ReadFile(shimFile)
		if err != nil {
			return err
		}
		shim, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err
	})
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", shim)); err != nil || !strings.HasPrefix(string(cmd), "phalanx-shim\x00") {
		t.Fatalf("the task's parent %d is %q (%v), not its supervisor", shim, cmd, err)
	}
	if err := syscall.Kill(shim, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(shim, syscall.SIGCONT) })

	phx("scancel", fmt.Sprint(id))
	c.WaitJob(id, 30*time.Second, "CANCELLED")
	want := fmt.Sprintf("unkillable: Kill task failed: job %d rank 0 still running 1s after SIGKILL (GPUs 0,1,2,3,4,5,6,7 may still be in use)", id)
	c.Eventually(10*time.Second, func() error {
		if out := phx("sinfo", "-R", "-h", "-o", "%E|%T|%N"); out != want+"|drained|"+stuck+"\n" {
			return fmt.Errorf("sinfo -R: %q, want %q", out, want+"|drained|"+stuck)
		}
		return nil
	})
	next := submit(t, c, spec(dir, "next", 1, 8, "#!/bin/sh\ntrue\n"))
	if j := c.WaitJob(next, 20*time.Second, "COMPLETED"); j.Alloc[0].Node == stuck {
		t.Errorf("the next job ran on %s, drained with a stuck task", stuck)
	}
}
