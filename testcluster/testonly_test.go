package testcluster_test

import (
	"context"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// sbatch --test-only answers with the start a real pass would give the job,
// and commits nothing.
func TestTestOnlyGivesTheExpectedStart(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2})
	dir := t.TempDir()
	probe := func() *phalanxv1.SubmitJobResponse {
		t.Helper()
		resp, err := c.Client.SubmitJob(context.Background(), &phalanxv1.SubmitJobRequest{
			Spec: spec(dir, "probe", 2, 8, "#!/bin/sh\ntrue\n"), TestOnly: true})
		if err != nil {
			t.Fatalf("test-only: %v", err)
		}
		return resp
	}
	before := time.Now()
	if r := probe(); r.JobId != 0 || r.ExpectedStart == nil || r.ExpectedStart.AsTime().Before(before.Add(-time.Second)) ||
		r.ExpectedStart.AsTime().After(time.Now().Add(time.Second)) || r.Partition != "gpu" {
		t.Errorf("idle cluster: %v; want job 0, start now, in the default partition gpu", r)
	}

	busy := spec(dir, "busy", 2, 8, "#!/bin/sh\nsleep 600\n")
	busy.TimeLimitSeconds = 3600
	id := submit(t, c, busy)
	job := c.WaitJob(id, 20*time.Second, "RUNNING")
	end := job.StartTime.AsTime().Add(time.Hour)
	if r := probe(); r.ExpectedStart == nil || r.ExpectedStart.AsTime().Sub(end).Abs() > 2*time.Second {
		t.Errorf("busy cluster: expected start %v; want about %v (the running job's time limit)", r.GetExpectedStart().AsTime(), end)
	}
	jobs, err := c.Client.ListJobs(context.Background(), &phalanxv1.ListJobsRequest{IncludeFinished: true})
	if err != nil || len(jobs.Jobs) != 1 {
		t.Errorf("test-only submissions were recorded: %d jobs, %v", len(jobs.GetJobs()), err)
	}
}
