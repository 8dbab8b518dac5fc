package controller

import (
	"context"
	"testing"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// A cancelled job whose task still stops (its grace period) holds its GPUs:
// squeue lists it without -t, and -t CG selects it, as Slurm's shows a
// COMPLETING job, until its agent reports the task ended; sacct's state
// is the job's own.
func TestCompletingJobListedUntilItsTasksEnd(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	api := &controllerService{s: s}
	ctx := context.Background()
	resp, err := s.submit(ctx, testSpec(1, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	j := waitState(t, s, id, cluster.JobConfiguring)
	if _, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{resp.JobId}}); err != nil {
		t.Fatal(err)
	}
	listed := func(req *phalanxv1.ListJobsRequest) *phalanxv1.Job {
		t.Helper()
		out, err := api.ListJobs(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, lj := range out.Jobs {
			if lj.Id == resp.JobId {
				return lj
			}
		}
		return nil
	}
	queue := &phalanxv1.ListJobsRequest{}
	cg := &phalanxv1.ListJobsRequest{States: []string{string(cluster.JobCompleting)}}
	ca := &phalanxv1.ListJobsRequest{States: []string{string(cluster.JobCancelled)}}
	for name, req := range map[string]*phalanxv1.ListJobsRequest{"no -t": queue, "-t CG": cg, "-t CA": ca} {
		lj := listed(req)
		if lj == nil || !lj.Completing || lj.State != string(cluster.JobCancelled) {
			t.Errorf("squeue %s while the task stops: %v; want the job, CANCELLED and completing", name, lj)
		}
	}

	ns := &nodeService{s: s}
	if _, err := ns.ReportTaskStatus(ctx, &phalanxv1.ReportTaskStatusRequest{
		Node: "n1", JobId: resp.JobId, Attempt: int32(j.Attempt), State: string(cluster.TaskKilled), ExitSignal: 15,
	}); err != nil {
		t.Fatal(err)
	}
	if lj := listed(queue); lj != nil {
		t.Errorf("squeue without -t lists the job after its task ended: %v", lj)
	}
	if lj := listed(cg); lj != nil {
		t.Errorf("squeue -t CG lists the job after its task ended: %v", lj)
	}
	if lj := listed(&phalanxv1.ListJobsRequest{History: true}); lj == nil || lj.Completing || lj.State != string(cluster.JobCancelled) {
		t.Errorf("sacct: %v; want the job CANCELLED, not completing", lj)
	}
}
