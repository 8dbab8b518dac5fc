package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// asSbatchSends is a --dependency as sbatch sends it: parsed, then
// written in the canonical form.
func asSbatchSends(t *testing.T, dep string) string {
	t.Helper()
	d, err := cluster.ParseDependency(dep)
	if err != nil {
		t.Fatalf("sbatch -d %s: %v", dep, err)
	}
	return d.String()
}

// wantDependency waits until job id is PENDING with reason and its
// dependency shows as Slurm shows it.
func wantDependency(t *testing.T, c *testcluster.Cluster, id uint64, reason, shown string) {
	t.Helper()
	c.Eventually(10*time.Second, func() error {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.State != "PENDING" || j.Reason != reason || j.GetSpec().GetDependency() != shown {
			return fmt.Errorf("job %d: %s (%s) dependency %q, %v; want PENDING (%s) dependency %q",
				id, j.GetState(), j.GetReason(), j.GetSpec().GetDependency(), err, reason, shown)
		}
		return nil
	})
}

// "?" between two conditions of one type is any of them, as sbatch sends
// it too: afterok on a job that failed or on one that completes runs once
// the second completes. Until then each condition shows with its own
// state, and a held job shows the dependency it will wait on once
// released.
func TestDependencyAnyOfOneTypeAndItsDisplay(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 4, LeafSize: 4})
	dir := t.TempDir()
	failed := submit(t, c, spec(dir, "fails", 1, 8, "#!/bin/sh\nexit 1\n"))
	slow := submit(t, c, spec(dir, "slow", 1, 8, "#!/bin/sh\nsleep 5\n"))
	s := spec(dir, "either", 1, 8, "#!/bin/sh\ntrue\n")
	s.Dependency = asSbatchSends(t, fmt.Sprintf("afterok:%d?afterok:%d", failed, slow))
	either := submit(t, c, s)
	s = spec(dir, "held", 1, 8, "#!/bin/sh\ntrue\n")
	s.Dependency, s.Hold = asSbatchSends(t, fmt.Sprintf("afterany:%d:%d", failed, slow)), true
	held := submit(t, c, s)

	c.WaitJob(failed, 20*time.Second, "FAILED")
	wantDependency(t, c, either, "Dependency", fmt.Sprintf("afterok:%d(failed)?afterok:%d(unfulfilled)", failed, slow))
	wantDependency(t, c, held, "JobHeldUser", fmt.Sprintf("afterany:%d(unfulfilled)", slow))
	if j := c.WaitJob(either, 30*time.Second, "COMPLETED", "FAILED", "CANCELLED"); j.State != "COMPLETED" {
		t.Errorf("afterok:%d?afterok:%d after %d completed: %s (%s)", failed, slow, slow, j.State, j.Reason)
	}
	wantDependency(t, c, held, "JobHeldUser", "") // satisfied: nothing left to show
}

// A task of an array is ARRAYID_TASKID, as in Slurm; the array's ID is
// every task. Task 1 of the array fails, tasks 0 and 2 complete.
func TestDependencyOnArrayTasks(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 4, LeafSize: 4})
	dir := t.TempDir()
	ctx := context.Background()
	s := spec(dir, "sweep", 1, 8, "#!/bin/sh\n[ \"$SLURM_ARRAY_TASK_ID\" = 1 ] && exit 1\n[ \"$SLURM_ARRAY_TASK_ID\" = 2 ] && sleep 5\nexit 0\n")
	s.Output, s.Array = "", "0-2"
	array := submit(t, c, s)
	withDep := func(name, dep string) uint64 {
		s := spec(dir, name, 1, 8, "#!/bin/sh\ntrue\n")
		s.Dependency = asSbatchSends(t, dep)
		return submit(t, c, s)
	}
	onTask2 := withDep("on-task-2", fmt.Sprintf("afterok:%d_2", array))
	onTask1 := withDep("on-task-1", fmt.Sprintf("afternotok:%d_1", array))
	onAll := withDep("on-all", fmt.Sprintf("afterok:%d", array))
	// The first task's ID is the array's: ARRAYID_0 is that task alone.
	onTask0 := withDep("on-task-0", fmt.Sprintf("afterok:%d_0", array))
	notOnTask0 := withDep("not-on-task-0", fmt.Sprintf("afternotok:%d_0", array))

	wantDependency(t, c, onTask2, "Dependency", fmt.Sprintf("afterok:%d_2(unfulfilled)", array))
	for _, id := range []uint64{onTask2, onTask1, onTask0} {
		if j := c.WaitJob(id, 30*time.Second, "COMPLETED", "FAILED", "CANCELLED"); j.State != "COMPLETED" {
			t.Errorf("job %d, on a task of array %d: %s (%s)", id, array, j.State, j.Reason)
		}
	}
	wantDependency(t, c, onAll, "DependencyNeverSatisfied", fmt.Sprintf("afterok:%d_*(failed)", array))
	wantDependency(t, c, notOnTask0, "DependencyNeverSatisfied", fmt.Sprintf("afternotok:%d_0(failed)", array))

	for dep, want := range map[string]string{
		fmt.Sprintf("afterok:%d_9", array):    fmt.Sprintf("array %d has no task 9", array),
		fmt.Sprintf("afterok:%d_1", onAll):    fmt.Sprintf("job %d is not a job array", onAll),
		fmt.Sprintf("afterok:%d_1", 1<<40):    "does not exist",
		fmt.Sprintf("afterany:%d_1", array+1): fmt.Sprintf("job %d is not a job array", array+1),
	} {
		s := spec(dir, "refused", 1, 8, "#!/bin/sh\ntrue\n")
		s.Dependency = asSbatchSends(t, dep)
		_, err := c.Client.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: s})
		if err == nil || !strings.Contains(err.Error(), "Job dependency problem") || !strings.Contains(err.Error(), want) {
			t.Errorf("sbatch -d %s: %v; want a dependency problem saying %q", dep, err, want)
		}
	}
}
