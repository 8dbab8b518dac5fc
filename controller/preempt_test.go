package controller

import (
	"context"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// TestPreemptSignalsThenRequeues drives step 2 and 3 of preemption with a
// plan given by hand: the victim's assignments carry stop with the
// preemption grace; once its task reports KILLED the job is pending again,
// attempt 1, and the next pass places that attempt as new tasks.
func TestPreemptSignalsThenRequeues(t *testing.T) {
	s := newTestServer(t, Config{KillGrace: time.Second, PreemptGrace: 7 * time.Second})
	register(t, s, nil, "n1")
	resp, err := s.submit(context.Background(), testSpec(1, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	j := waitState(t, s, id, cluster.JobConfiguring)

	plan := &scheduler.Plan{Preemptions: []scheduler.Preemption{{Victim: id, For: 99}, {Victim: id, For: 98}, {Victim: 12345, For: 99}}}
	ctx := context.Background()
	if n := s.preempt(ctx, plan, s.store.ActiveJobs(), time.Now()); n != 1 {
		t.Fatalf("preempt signalled %d jobs; want 1 (the victim once, the unknown job skipped)", n)
	}
	if got, _ := s.store.Job(id); got.State != cluster.JobPreempted {
		t.Fatalf("victim is %s, want PREEMPTED", got.State)
	}
	// Signalling again (the same plan on the next pass) changes nothing.
	if n := s.preempt(ctx, plan, s.store.ActiveJobs(), time.Now()); n != 0 {
		t.Errorf("second preempt signalled %d jobs; want 0", n)
	}
	as := s.assignments("n1", nodeJobs(s, "n1"))
	if len(as.Assignments) != 1 {
		t.Fatalf("assignments = %v; want the victim's task", as)
	}
	if a := as.Assignments[0]; !a.Stop || a.GraceSeconds != 7 || a.StopReason != "PREEMPTED" || a.Attempt != 0 {
		t.Fatalf("victim's assignment = stop %v grace %d reason %q attempt %d; want stop, grace 7, PREEMPTED, attempt 0",
			a.Stop, a.GraceSeconds, a.StopReason, a.Attempt)
	}

	ns := &nodeService{s: s}
	_, err = ns.ReportTaskStatus(context.Background(), &phalanxv1.ReportTaskStatusRequest{
		Node: "n1", JobId: uint64(id), Attempt: int32(j.Attempt), Rank: 0, State: string(cluster.TaskKilled), ExitSignal: 15,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Requeued, then placed again by the next pass as attempt 1.
	j = waitState(t, s, id, cluster.JobConfiguring)
	if j.Attempt != 1 || !j.Requeued {
		t.Fatalf("requeued job placed again with attempt %d requeued %v; want attempt 1, requeued", j.Attempt, j.Requeued)
	}
	as = s.assignments("n1", nodeJobs(s, "n1"))
	if len(as.Assignments) != 1 || as.Assignments[0].Attempt != 1 || as.Assignments[0].Stop {
		t.Fatalf("assignments after requeue = %v; want attempt 1's task, not stopped", as)
	}
}
