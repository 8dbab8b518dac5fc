package controller

import (
	"context"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// sbatch --test-only judges the job as a scheduling pass would: after its
// --begin, and past the jobs that may not start yet (held ones, here one
// that would take every GPU). Its estimate was "now" whatever the --begin,
// and came after any held job ahead of it.
func TestTestOnlyHonoursTheGate(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	ctx := context.Background()
	held := testSpec(1, 8)
	held.Hold = true
	if _, err := s.submit(ctx, held, false, nil); err != nil {
		t.Fatal(err)
	}
	now := s.cfg.Clock.Now()
	resp, err := s.submit(ctx, testSpec(1, 8), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.ExpectedStart.AsTime(); got.Before(now) || got.After(now.Add(time.Minute)) {
		t.Errorf("--test-only behind a held job: expected start %v; want now (%v): a held job takes nothing", got, now)
	}
	begin := now.Add(time.Hour).Truncate(time.Second)
	spec := testSpec(1, 8)
	spec.BeginTime = timestamppb.New(begin)
	if resp, err = s.submit(ctx, spec, true, nil); err != nil {
		t.Fatal(err)
	}
	if got := resp.ExpectedStart.AsTime(); !got.Equal(begin) {
		t.Errorf("--test-only --begin=%v: expected start %v; want its begin", begin, got)
	}
}

// --test-only with a --begin judges the job as the pass at its begin
// would: a job that holds the node past it delays it to that job's end.
func TestTestOnlyJudgesAtBegin(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	ctx := context.Background()
	running := testSpec(1, 8)
	running.TimeLimitSeconds = 2 * 3600
	resp, err := s.submit(ctx, running, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := waitState(t, s, cluster.JobID(resp.JobId), cluster.JobConfiguring)
	end := j.StartTime.Add(2 * time.Hour)
	begin := s.cfg.Clock.Now().Add(time.Hour).Truncate(time.Second)
	spec := testSpec(1, 8)
	spec.TimeLimitSeconds = 600
	spec.BeginTime = timestamppb.New(begin)
	if resp, err = s.submit(ctx, spec, true, nil); err != nil {
		t.Fatal(err)
	}
	if got := resp.ExpectedStart.AsTime(); got.Sub(end).Abs() > time.Second {
		t.Errorf("--test-only --begin=+1h behind a job that holds the node 2h: expected start %v; want that job's end, %v", got, end)
	}
}
