package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// scontrol top puts the listed jobs first among their owner's pending
// jobs of the same partition, account and QoS, in the order given, by
// raising the others' nice values; other users' jobs are not touched.
func TestTopOrdersTheOwnersPendingJobs(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	ctx := context.Background()
	submit := func(user string, uid int32, gpus int, nice int32) cluster.JobID {
		t.Helper()
		spec := testSpec(1, gpus)
		spec.User, spec.Uid, spec.Nice = user, uid, nice
		resp, err := s.submit(ctx, spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cluster.JobID(resp.JobId)
	}
	waitState(t, s, submit("alice", 1000, 8, 0), cluster.JobConfiguring) // holds the node: the rest wait
	a1, a2, a3 := submit("alice", 1000, 8, 0), submit("alice", 1000, 4, 0), submit("alice", 1000, 2, 10)
	b1 := submit("bob", 1001, 1, 0)
	bobNice := job(t, s, b1).Nice

	// order lists alice's pending jobs, highest priority first.
	order := func() []cluster.JobID {
		var jobs []*cluster.Job
		for _, j := range s.store.ActiveJobs() {
			if j.State == cluster.JobPending && j.User == "alice" {
				jobs = append(jobs, j)
			}
		}
		now := time.Now()
		slices.SortStableFunc(jobs, func(x, y *cluster.Job) int {
			return int(scheduler.Priority(y, now, scheduler.Options{}) - scheduler.Priority(x, now, scheduler.Options{}))
		})
		var ids []cluster.JobID
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
		return ids
	}
	if got := order(); !slices.Equal(got, []cluster.JobID{a1, a2, a3}) {
		t.Fatalf("before: %v, want %v (bigger first, a3 niced)", got, []cluster.JobID{a1, a2, a3})
	}
	if _, err := s.top(ctx, []uint64{uint64(a3)}); err != nil {
		t.Fatal(err)
	}
	if got := order(); !slices.Equal(got, []cluster.JobID{a3, a1, a2}) {
		t.Errorf("after top %d: %v, want %v", a3, got, []cluster.JobID{a3, a1, a2})
	}
	a2Nice := job(t, s, a2).Nice
	if _, err := s.top(ctx, []uint64{uint64(a2), uint64(a1), uint64(b1)}); err != nil { // b1: another user's, left alone
		t.Fatal(err)
	}
	if got := order(); !slices.Equal(got, []cluster.JobID{a2, a1, a3}) {
		t.Errorf("after top %d,%d: %v, want %v", a2, a1, got, []cluster.JobID{a2, a1, a3})
	}
	if n := job(t, s, b1).Nice; n != bobNice {
		t.Errorf("bob's job reniced %d -> %d", bobNice, n)
	}
	if j := job(t, s, a2); j.Nice != a2Nice {
		t.Errorf("the first listed job was reniced %d -> %d; top only lowers the others", a2Nice, j.Nice)
	}
	if _, err := s.top(ctx, nil); err == nil {
		t.Error("top with no job: no error")
	}
	// A held job is not put first, as in Slurm.
	if err := s.updateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: uint64(a3), Hold: phalanxv1.HoldRequest_HOLD_REQUEST_HOLD}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Job is in held state, pending scheduler release for job %d", a3)
	if _, err := s.top(ctx, []uint64{uint64(a3)}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("top of a held job: %v; want %q", err, want)
	}
}

func job(t *testing.T, s *Server, id cluster.JobID) *cluster.Job {
	t.Helper()
	j, err := s.store.JobRecord(id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
