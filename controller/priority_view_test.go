package controller

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// squeue's %Q and scontrol's Priority= show the score the scheduler ranks
// jobs by, as Slurm's show its computed priority: QoS, the admin's
// Priority= and Nice move it; a running job keeps the score it started
// with.
func TestShownPriorityIsTheScore(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	api := &controllerService{s: s}
	ctx := context.Background()
	submit := func(qos string, nice int32) uint64 {
		spec := testSpec(1, 8)
		spec.Qos, spec.Nice = qos, nice
		resp, err := s.submit(ctx, spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.JobId
	}
	running := submit("", 0)
	waitState(t, s, cluster.JobID(running), cluster.JobConfiguring)
	normal, high, nice := submit("normal", 0), submit("high", 0), submit("normal", 100)
	shown := func() map[uint64]int64 {
		resp, err := api.ListJobs(ctx, &phalanxv1.ListJobsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[uint64]int64{}
		for _, j := range resp.Jobs {
			out[j.Id] = j.Priority
			one, err := api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: j.Id})
			if err != nil || one.Priority != j.Priority {
				t.Errorf("job %d: GetJob shows priority %d (%v), ListJobs %d; want the same", j.Id, one.GetPriority(), err, j.Priority)
			}
		}
		return out
	}
	p := shown()
	if p[high]-p[normal] < 1_000_000 || p[normal]-p[nice] != 100 || p[normal] < 1_000_000 {
		t.Errorf("priorities %v: want high a QoS step (1,000,000) above normal, nice=100 100 below it", p)
	}
	j, err := s.store.Job(cluster.JobID(running))
	if err != nil {
		t.Fatal(err)
	}
	if want := shownPriority(j, j.StartTime, s.priorityOptions()); p[running] != want || want <= 0 {
		t.Errorf("running job: priority %d; want %d, its score when it started", p[running], want)
	}
	if err := s.updateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: normal, Priority: proto.Int64(5000)}); err != nil {
		t.Fatal(err)
	}
	if after := shown(); after[normal]-p[normal] != 5000 {
		t.Errorf("Priority=5000 moved the shown score from %d to %d; want 5000 more", p[normal], after[normal])
	}
}

// A hold shows at once, as Slurm sets it in the update: its reason, and a
// priority of zero. As in Slurm, Priority=0 holds a job and a non-zero one
// lets a held job run.
func TestHoldShowsAtOnce(t *testing.T) {
	s := newTestServer(t, Config{SchedInterval: time.Hour})
	register(t, s, nil, "n1")
	ctx := context.Background()
	busy, err := s.submit(ctx, testSpec(1, 8), false, nil) // n1's GPUs: the job below stays pending
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s, cluster.JobID(busy.JobId), cluster.JobConfiguring)
	spec := testSpec(1, 8)
	spec.Hold = true
	resp, err := s.submit(ctx, spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	api := &controllerService{s: s}
	show := func() (string, int64) {
		j, err := api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: resp.JobId})
		if err != nil {
			t.Fatal(err)
		}
		return j.Reason, j.Priority
	}
	for _, step := range []struct {
		what   string
		update *phalanxv1.UpdateJobRequest
		reason cluster.PendingReason // "": no hold's
	}{
		{"submitted held", nil, cluster.ReasonJobHeldUser},
		{"released", &phalanxv1.UpdateJobRequest{Hold: phalanxv1.HoldRequest_HOLD_REQUEST_RELEASE}, ""},
		{"Priority=0", &phalanxv1.UpdateJobRequest{Priority: proto.Int64(0)}, cluster.ReasonJobHeldAdmin},
		{"Priority=5", &phalanxv1.UpdateJobRequest{Priority: proto.Int64(5)}, ""},
	} {
		if step.update != nil {
			step.update.JobId = resp.JobId
			if err := s.updateJob(ctx, step.update); err != nil {
				t.Fatalf("%s: %v", step.what, err)
			}
		}
		reason, prio := show()
		held := step.reason != ""
		if (held && (cluster.PendingReason(reason) != step.reason || prio != 0)) || (!held && (cluster.PendingReason(reason).Held() || prio == 0)) {
			t.Errorf("%s: reason %q, priority %d; want %q and priority 0 when held, else no hold's reason and a priority", step.what, reason, prio, step.reason)
		}
	}
}
