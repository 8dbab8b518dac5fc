package controller

import (
	"context"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// How the scheduler placed each attempt reaches the API (sacct's Flags): a
// job started in priority order says main; one started past a job left
// waiting, backfill; one not started, nothing.
func TestPlacedByReachesTheAPI(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1", "n2")
	ctx := context.Background()
	submit := func(nodes int, limit time.Duration) cluster.JobID {
		spec := testSpec(nodes, 8)
		spec.TimeLimitSeconds = int64(limit / time.Second)
		resp, err := s.submit(ctx, spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cluster.JobID(resp.JobId)
	}
	first := submit(1, time.Hour)
	waitState(t, s, first, cluster.JobConfiguring)
	big := submit(2, time.Hour)        // waits for first's node; reserved both at +1h
	small := submit(1, 30*time.Minute) // the other node, done before then: backfill
	waitState(t, s, small, cluster.JobConfiguring)
	resp, err := (&controllerService{s: s}).ListJobs(ctx, &phalanxv1.ListJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[cluster.JobID]string{}
	for _, j := range resp.Jobs {
		for _, a := range j.Attempts {
			got[cluster.JobID(j.Id)] += a.PlacedBy
		}
	}
	want := map[cluster.JobID]string{first: "main", big: "", small: "backfill"}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("job %d: attempts placed by %q; want %q (all: %v)", id, got[id], w, got)
		}
	}
}
