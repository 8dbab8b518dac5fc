package cluster

import "testing"

func TestPreemptStopsThenRequeuesWhenEveryTaskEnded(t *testing.T) {
	j := requeueableJob(t)
	ApplyTaskReport(j, rep(0, TaskRunning, 0, 0, 1))
	ApplyTaskReport(j, rep(1, TaskRunning, 0, 0, 2))
	if !Preempt(j, at(10), JobAttempt{}) {
		t.Fatal("Preempt of a running job reported no change")
	}
	if j.State != JobPreempted || j.Reason != ReasonPreempted || !j.Live() {
		t.Fatalf("after Preempt: %s (%s) live=%v; want PREEMPTED (Preempted), still holding resources", j.State, j.Reason, j.Live())
	}
	if Preempt(j, at(11), JobAttempt{}) {
		t.Error("a second Preempt changed the job")
	}
	ApplyTaskReport(j, rep(0, TaskKilled, 0, 15, 12))
	if j.State != JobPreempted || j.Attempt != 0 {
		t.Fatalf("one task still running: %s attempt %d; want PREEMPTED attempt 0", j.State, j.Attempt)
	}
	ApplyTaskReport(j, rep(1, TaskKilled, 0, 15, 13))
	want := Job{ID: 7, Nodes: 2, GPUsPerNode: 2, State: JobPending, Reason: ReasonPreempted, Attempt: 1, Requeued: true}
	if j.State != want.State || j.Reason != want.Reason || j.Attempt != 1 || !j.Requeued ||
		j.Alloc != nil || j.Tasks != nil || j.MasterPort != 0 || !j.StartTime.IsZero() || !j.EndTime.IsZero() {
		t.Fatalf("after the last task ended: %+v; want requeued %+v", *j, want)
	}
	// A late report for the old attempt is ignored.
	if ApplyTaskReport(j, rep(0, TaskExited, 0, 0, 14)) {
		t.Error("a report for attempt 0 changed the requeued job")
	}
	// The next attempt places like any pending job.
	if err := Place(j, Allocation{Nodes: []NodeAlloc{{Node: "n3"}, {Node: "n4"}}}, 29501, at(20), PlacedMain); err != nil {
		t.Fatalf("place attempt 1: %v", err)
	}
	r := TaskReport{JobID: 7, Attempt: 1, Rank: 0, Node: "n3", State: TaskRunning, Time: at(21)}
	if !ApplyTaskReport(j, r) {
		t.Error("a report for attempt 1 was ignored")
	}
}

func TestPreemptOnlyPlacedJobs(t *testing.T) {
	for _, st := range []JobState{JobPending, JobCompleted, JobFailed, JobCancelled, JobPreempted} {
		j := &Job{ID: 1, State: st}
		if Preempt(j, at(1), JobAttempt{}) || j.State != st {
			t.Errorf("Preempt changed a %s job to %s", st, j.State)
		}
	}
}

func TestPreemptWithNoLiveTaskRequeuesAtOnce(t *testing.T) {
	j := requeueableJob(t)
	ApplyTaskReport(j, rep(0, TaskExited, 0, 0, 1)) // rank 0 done, rank 1 still assigned
	j.Tasks[1].State = TaskExited                   // as if rank 1 ended in the same instant
	if !Preempt(j, at(2), JobAttempt{}) || j.State != JobPending || j.Attempt != 1 {
		t.Fatalf("Preempt of a job with no live task: %s attempt %d; want PENDING attempt 1", j.State, j.Attempt)
	}
}

func TestPreemptedJobNodeLostRequeues(t *testing.T) {
	j := requeueableJob(t)
	Preempt(j, at(1), JobAttempt{})
	ApplyTaskReport(j, rep(0, TaskKilled, 0, 15, 2))
	if !NodeLost(j, "n2", at(3), "Not responding", false) {
		t.Fatal("NodeLost reported no change")
	}
	if j.State != JobPending || j.Attempt != 1 {
		t.Fatalf("preempted job after its last node was lost: %s attempt %d; want PENDING attempt 1", j.State, j.Attempt)
	}
}

func TestCancelWhilePreemptedStaysCancelled(t *testing.T) {
	j := placedJob(t)
	Preempt(j, at(1), JobAttempt{})
	if !Cancel(j, at(2), "Cancelled by user") {
		t.Fatal("Cancel of a job being preempted reported no change")
	}
	ApplyTaskReport(j, rep(0, TaskKilled, 0, 15, 3))
	ApplyTaskReport(j, rep(1, TaskKilled, 0, 15, 4))
	if j.State != JobCancelled || j.Attempt != 0 || j.Live() {
		t.Fatalf("cancelled while preempted: %s attempt %d live %v; want CANCELLED, attempt 0, not live", j.State, j.Attempt, j.Live())
	}
	if !j.EndTime.Equal(at(2)) {
		t.Errorf("EndTime %v, want the cancel time %v", j.EndTime, at(2))
	}
}

// The preempted attempt names the job it makes room for, and still does
// once the job is back in the queue: the scheduler keeps the nodes the
// attempt freed for that job. A second Preempt changes nothing, the record
// included; the next attempt starts without one.
func TestPreemptRecordsThePreemptor(t *testing.T) {
	j := requeueableJob(t)
	ApplyTaskReport(j, rep(0, TaskRunning, 0, 0, 1))
	forJob := JobAttempt{Job: 9, Attempt: 2}
	if !Preempt(j, at(10), forJob) {
		t.Fatal("Preempt of a running job reported no change")
	}
	if got := j.Attempts[0].PreemptedFor; got != forJob {
		t.Fatalf("while leaving: attempt 0 preempted for %+v; want %+v", got, forJob)
	}
	Preempt(j, at(11), JobAttempt{Job: 10})
	ApplyTaskReport(j, rep(0, TaskKilled, 0, 15, 12))
	ApplyTaskReport(j, rep(1, TaskKilled, 0, 15, 13))
	if j.State != JobPending || j.Attempts[0].PreemptedFor != forJob || j.Attempts[0].State != JobPreempted {
		t.Fatalf("requeued: %s, attempt 0 %s preempted for %+v; want PENDING, PREEMPTED for %+v",
			j.State, j.Attempts[0].State, j.Attempts[0].PreemptedFor, forJob)
	}
	if err := Place(j, Allocation{Nodes: []NodeAlloc{{Node: "n3"}, {Node: "n4"}}}, 29501, at(20), PlacedMain); err != nil {
		t.Fatal(err)
	}
	if got := j.Attempts[1].PreemptedFor; got != (JobAttempt{}) {
		t.Errorf("attempt 1 preempted for %+v; want none", got)
	}
}

// requeueableJob is placedJob with the policy a job gets by default: it
// may be requeued.
func requeueableJob(t *testing.T) *Job {
	t.Helper()
	j := placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: DefaultMaxRestarts, On: DefaultRestartOn}
	return j
}

// A preempted job that may not be requeued (--no-requeue, or
// --max-restarts=0) ends CANCELLED once its tasks have stopped, as Slurm's
// PreemptMode=REQUEUE cancels a job it cannot requeue: it never runs again.
func TestPreemptedJobThatMayNotRequeueEnds(t *testing.T) {
	j := placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 0, On: DefaultRestartOn}
	ApplyTaskReport(j, rep(0, TaskRunning, 0, 0, 1))
	ApplyTaskReport(j, rep(1, TaskRunning, 0, 0, 1))
	Preempt(j, at(5), JobAttempt{Job: 9})
	if j.State != JobPreempted || !j.InQueue() {
		t.Fatalf("while its tasks stop: %s; want PREEMPTED", j.State)
	}
	ApplyTaskReport(j, rep(0, TaskKilled, 0, 15, 6))
	ApplyTaskReport(j, rep(1, TaskKilled, 0, 15, 7))
	if j.State != JobCancelled || j.Reason != ReasonPreemptedNoRequeue || j.Attempt != 0 || j.InQueue() {
		t.Fatalf("after its tasks stopped: %s (%s) attempt %d; want CANCELLED (%s) attempt 0, out of the queue",
			j.State, j.Reason, j.Attempt, ReasonPreemptedNoRequeue)
	}
	if a := j.Attempts[0]; a.State != JobPreempted || !a.EndTime.Equal(at(7)) {
		t.Errorf("attempt 0 = %s ending %v; want PREEMPTED ending at second 7", a.State, a.EndTime)
	}
	if j.ExitCode != 0 || j.ExitSignal != SigTerm {
		t.Errorf("exit status %d:%d; want 0:%d, a cancelled job's", j.ExitCode, j.ExitSignal, SigTerm)
	}
}
