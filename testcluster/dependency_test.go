package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// Jobs wait on others as sbatch --dependency says: afterok runs after a
// success, afternotok waits for a failure that does not come (and, asked
// to, is cancelled), afterany runs after any end, singleton waits for the
// job of its name before it; a dependency on a job that does not exist is
// refused at submit.
func TestDependenciesOrderJobs(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2})
	dir := t.TempDir()
	ctx := context.Background()
	first := submit(t, c, spec(dir, "first", 1, 8, "#!/bin/sh\nsleep 2\n"))
	withDep := func(name, dep string, kill bool) uint64 {
		s := spec(dir, name, 1, 8, "#!/bin/sh\necho "+name+"\n")
		s.Dependency, s.KillOnInvalidDep = dep, kill
		return submit(t, c, s)
	}
	ok := withDep("ok", fmt.Sprintf("afterok:%d", first), false)
	notOK := withDep("notok", fmt.Sprintf("afternotok:%d", first), true)
	waitsForever := withDep("forever", fmt.Sprintf("afternotok:%d", first), false)
	anyEnd := withDep("any", fmt.Sprintf("afterany:%d?afterok:%d", first, first), false)

	// While first runs, the others wait with reason Dependency, though a
	// node is free.
	c.WaitJob(first, 20*time.Second, "RUNNING")
	for _, id := range []uint64{ok, notOK, anyEnd} {
		c.Eventually(10*time.Second, func() error {
			j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
			if err != nil || j.State != "PENDING" || j.Reason != "Dependency" {
				return fmt.Errorf("job %d: %s (%s), %v; want PENDING (Dependency)", id, j.GetState(), j.GetReason(), err)
			}
			return nil
		})
	}
	if j := c.WaitJob(first, 30*time.Second, "COMPLETED", "FAILED"); j.State != "COMPLETED" {
		t.Fatalf("job %d ended %s", first, j.State)
	}
	for _, id := range []uint64{ok, anyEnd} {
		if j := c.WaitJob(id, 30*time.Second, "COMPLETED", "FAILED", "CANCELLED"); j.State != "COMPLETED" {
			t.Errorf("job %d after its dependency held: %s (%s)", id, j.State, j.Reason)
		}
	}
	if j := c.WaitJob(notOK, 30*time.Second, "CANCELLED", "COMPLETED"); j.State != "CANCELLED" || j.Reason != "DependencyNeverSatisfied" {
		t.Errorf("afternotok on a success, --kill-on-invalid-dep: %s (%s); want CANCELLED (DependencyNeverSatisfied)", j.State, j.Reason)
	}
	c.Eventually(10*time.Second, func() error {
		j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: waitsForever})
		if err != nil || j.State != "PENDING" || j.Reason != "DependencyNeverSatisfied" {
			return fmt.Errorf("job %d: %s (%s), %v; want PENDING (DependencyNeverSatisfied)", waitsForever, j.GetState(), j.GetReason(), err)
		}
		return nil
	})

	// singleton: the second job of a name waits for the first to end.
	one := submit(t, c, spec(dir, "single", 1, 8, "#!/bin/sh\nsleep 2\n"))
	c.WaitJob(one, 20*time.Second, "RUNNING")
	two := withDep("single", "singleton", false)
	c.Eventually(10*time.Second, func() error {
		j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: two})
		if err != nil || j.State != "PENDING" || j.Reason != "Dependency" {
			return fmt.Errorf("singleton job %d: %s (%s), %v; want PENDING (Dependency)", two, j.GetState(), j.GetReason(), err)
		}
		return nil
	})
	if j := c.WaitJob(two, 30*time.Second, "COMPLETED", "FAILED"); j.State != "COMPLETED" {
		t.Errorf("singleton job %d: %s", two, j.State)
	}
	if j, _ := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: one}); j.GetState() != "COMPLETED" || !j.EndTime.AsTime().Before(mustStart(t, c, two)) {
		t.Errorf("singleton job %d started before job %d of its name ended", two, one)
	}

	s := spec(dir, "orphan", 1, 8, "#!/bin/sh\ntrue\n")
	s.Dependency = "afterok:99999"
	_, err := c.Client.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: s})
	if err == nil || !strings.Contains(err.Error(), "Job dependency problem: job 99999 does not exist") {
		t.Errorf("a dependency on an unknown job: %v", err)
	}
}

func mustStart(t *testing.T, c *testcluster.Cluster, id uint64) time.Time {
	t.Helper()
	j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
	if err != nil || j.StartTime == nil {
		t.Fatalf("job %d: no start time (%v)", id, err)
	}
	return j.StartTime.AsTime()
}
