package controller

import (
	"context"
	"fmt"
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

// TestPreemptorKeepsFreedNodes: the job a victim leaves for gets its node,
// even when a job ahead of it in the queue arrives while the victim is
// still leaving (Slurm's preemptor gets what its victims release). Job A
// (partition hi) preempts V (lo) on the only node; B, in a partition of a
// higher tier, arrives during V's grace period; once V's task ends, A
// starts on the node and B waits.
func TestPreemptorKeepsFreedNodes(t *testing.T) {
	s := newTestServer(t, Config{KillGrace: time.Second, PreemptGrace: time.Minute, Partitions: []*cluster.Partition{
		{Name: "lo", AllNodes: true, Default: true, State: cluster.PartitionUp, PreemptMode: cluster.PreemptRequeue},
		{Name: "hi", AllNodes: true, State: cluster.PartitionUp, PriorityTier: 10},
		{Name: "top", AllNodes: true, State: cluster.PartitionUp, PriorityTier: 20},
	}})
	register(t, s, nil, "n1")
	ctx := context.Background()
	submit := func(part string) cluster.JobID {
		t.Helper()
		spec := testSpec(1, 8)
		spec.Partition = part
		resp, err := s.submit(ctx, spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cluster.JobID(resp.JobId)
	}
	v := submit("lo")
	waitState(t, s, v, cluster.JobConfiguring)
	a := submit("hi")
	vj := waitState(t, s, v, cluster.JobPreempted)
	if want := (cluster.JobAttempt{Job: a}); vj.Attempts[0].PreemptedFor != want {
		t.Fatalf("victim's attempt preempted for %+v; want %+v", vj.Attempts[0].PreemptedFor, want)
	}
	b := submit("top")
	eventually(t, 10*time.Second, func() error { // a pass has decided B: it waits
		s.mu.Lock()
		_, ok := s.pending.get(b)
		s.mu.Unlock()
		if !ok {
			return fmt.Errorf("no pass has decided job %d yet", b)
		}
		return nil
	})
	if j, _ := s.store.Job(b); j.State != cluster.JobPending {
		t.Fatalf("job B is %s while the victim leaves; want PENDING", j.State)
	}
	ns := &nodeService{s: s}
	_, err := ns.ReportTaskStatus(ctx, &phalanxv1.ReportTaskStatusRequest{
		Node: "n1", JobId: uint64(v), Attempt: 0, Rank: 0, State: string(cluster.TaskKilled), ExitSignal: 15,
	})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s, a, cluster.JobConfiguring)
	if j, _ := s.store.Job(b); j.State != cluster.JobPending {
		t.Errorf("job B is %s; want PENDING (the node went to the preemptor)", j.State)
	}
}
