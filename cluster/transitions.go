package cluster

import (
	"fmt"
	"sort"
	"time"
)

// Reasons a job ended, as Slurm and sacct name them.
const (
	ReasonNonZeroExit   = "NonZeroExitCode"
	ReasonLaunchFailure = "JobLaunchFailure"
	ReasonTimeLimit     = "TimeLimit"
	ReasonNodeFail      = "NodeFail"
	// ReasonPreempted: the attempt was stopped to make room for another job;
	// the job is requeued once its tasks have ended.
	ReasonPreempted = "Preempted"
	// ReasonPreemptedNoRequeue: the same, for a job that may not be
	// requeued (--no-requeue, --max-restarts=0): it ended instead.
	ReasonPreemptedNoRequeue = "Preempted; submitted with --no-requeue: not requeued"
)

// TaskReport is what an agent says about one task of one attempt. Time is
// when the agent saw the transition; it is chosen before the report is
// committed, so applying a report is deterministic.
type TaskReport struct {
	JobID      JobID
	Attempt    int
	Rank       int
	Node       string
	State      TaskState
	ExitCode   int
	ExitSignal int
	Message    string
	Time       time.Time
	// CheckpointCorrupt, with TaskFailed: the launch failed because the
	// rank's copy of the checkpoint step to resume from is corrupt
	// (RestartCheckpoint).
	CheckpointCorrupt bool
	// AgentShutdown, with TaskLost: the agent stopped the task because it
	// was shutting down (--stop-tasks-on-exit). The attempt fails for a
	// node cause, as for any lost task, but its node is not at fault: the
	// job's next attempt may run there again.
	AgentShutdown bool
	// Fenced, with TaskLost: the task was killed when its node's lease
	// ended, no controller having answered its agent for the lease's
	// length. That says no leader heard the node, not that the node failed
	// (a majority of the controllers down ends every node's lease, healthy
	// or not): the attempt fails for a node cause, but a node is at fault
	// only once the leader finds it silent past its TTL (NodeLost). The
	// leader keeps the agent's flag only for a fence that may be the
	// controllers' doing, in its grace after its election; a fence while
	// it answered all along is proposed as a plain LOST, and blames the
	// node (controller/lease.go, fenceExcused).
	Fenced bool
}

// ApplyTaskReport applies an agent's report to the job and derives the job's
// state from its tasks. It reports whether anything changed.
//
// A report is ignored when it is for another attempt, names a rank the job
// does not have or a node the rank is not on, or when the task has already
// ended: reports are idempotent, and a late RUNNING cannot revive a task.
func ApplyTaskReport(j *Job, r TaskReport) (changed bool) {
	if r.Attempt != j.Attempt || r.Rank < 0 || r.Rank >= len(j.Tasks) {
		return false
	}
	t := &j.Tasks[r.Rank]
	if t.Node != r.Node || t.State.Ended() {
		return false
	}
	switch {
	case r.State == TaskStarting:
		if t.State != TaskAssigned {
			return false
		}
		t.State = TaskStarting
		return true
	case r.State == TaskRunning:
		if t.State == TaskRunning {
			return false
		}
		t.State, t.StartTime = TaskRunning, r.Time
		// Running once every task has started; a fast rank may have ended
		// already.
		if j.State == JobConfiguring && allTasks(j, func(t Task) bool { return t.State == TaskRunning || t.State.Ended() }) {
			j.State, j.StartTime = JobRunning, r.Time
		}
		return true
	case r.State.Ended():
		endTask(t, r)
		if !j.State.Terminal() {
			jobAfterTaskEnd(j, t, r)
			if r.State == TaskFailed && r.CheckpointCorrupt {
				blame(j, RestartCheckpoint, "")
			}
		} else if r.State == TaskLost {
			lateVerdict(j, t, r)
		}
		releaseIfEnded(j)
		requeueIfStopped(j)
		restartIfFailed(j)
		return true
	}
	return false
}

func endTask(t *Task, r TaskReport) {
	t.State = r.State
	t.ExitCode, t.ExitSignal = r.ExitCode, r.ExitSignal
	t.Message = r.Message
	t.EndTime = r.Time
}

// jobAfterTaskEnd derives a non-terminal job's state after task t ended,
// as r reported.
func jobAfterTaskEnd(j *Job, t *Task, r TaskReport) {
	switch t.State {
	case TaskExited:
		if t.ExitCode != 0 || t.ExitSignal != 0 {
			failJob(j, t, ReasonNonZeroExit)
			blame(j, RestartExit, "")
			return
		}
		if allTasks(j, func(t Task) bool { return t.State == TaskExited && t.ExitCode == 0 && t.ExitSignal == 0 }) {
			finish(j, JobCompleted, string(ReasonNone), lastTaskEnd(j))
		}
	case TaskFailed:
		reason := ReasonLaunchFailure
		if t.Message != "" { // what failed, e.g. a pre-start check
			reason += ": " + t.Message
		}
		failJob(j, t, reason)
	case TaskKilled:
		// The agent stopped a task of a job that was still running: the
		// system's doing (the task was no longer assigned there), not the
		// user's code.
		reason := "task stopped by the node agent"
		if t.Message != "" {
			reason += ": " + t.Message
		}
		j.ExitCode, j.ExitSignal = t.ExitCode, t.ExitSignal
		finish(j, JobNodeFail, reason, t.EndTime)
	case TaskTimeout:
		finish(j, JobTimeout, ReasonTimeLimit, t.EndTime)
	case TaskHung:
		reason := ReasonHang
		if t.Message != "" {
			reason += ": " + t.Message
		}
		j.ExitCode, j.ExitSignal = t.ExitCode, t.ExitSignal
		finish(j, JobFailed, reason, t.EndTime)
		blame(j, RestartHang, "")
	case TaskLost: // by its agent's word: a failed pre-start check, a shutdown
		reason, fault := lostVerdict(t, r)
		finish(j, JobNodeFail, reason, t.EndTime)
		blame(j, RestartNode, fault)
	}
}

// lostVerdict is what a LOST report r of task t says: why the task was
// lost, and the node at fault, its own, or none for an agent that shut
// down and for a task fenced at its lease's end.
func lostVerdict(t *Task, r TaskReport) (reason, fault string) {
	reason = t.Message
	if reason == "" {
		reason = ReasonNodeFail
	}
	if r.AgentShutdown || r.Fenced {
		return reason, ""
	}
	return reason, t.Node
}

// lateVerdict takes a LOST report r of task t, which came once the job had
// ended, for its agent's verdict on its node when the attempt ended for a
// node cause that named no node (a fenced task, an agent's shutdown came
// first): that node is the one at fault (fillFault), as it would be had
// its report come first. Any other ended attempt keeps its cause.
func lateVerdict(j *Job, t *Task, r TaskReport) {
	reason, fault := lostVerdict(t, r)
	if n := len(j.Attempts); fault == "" || n == 0 || j.Attempts[n-1].Cause != RestartNode {
		return
	}
	fillFault(j, fault, reason)
}

func failJob(j *Job, t *Task, reason string) {
	j.ExitCode, j.ExitSignal = t.ExitCode, t.ExitSignal
	finish(j, JobFailed, reason, t.EndTime)
}

// finish moves a job to a terminal state.
func finish(j *Job, st JobState, reason string, t time.Time) {
	j.State, j.Reason, j.EndTime = st, reason, t
}

func allTasks(j *Job, pred func(Task) bool) bool {
	for _, t := range j.Tasks {
		if !pred(t) {
			return false
		}
	}
	return len(j.Tasks) > 0
}

// lastTaskEnd is the latest task end time; reports may arrive out of order.
func lastTaskEnd(j *Job) time.Time {
	var last time.Time
	for _, t := range j.Tasks {
		if t.EndTime.After(last) {
			last = t.EndTime
		}
	}
	return last
}

// Place starts a pending job's next attempt on alloc: one ASSIGNED task per
// allocated node, rank by position. StartTime is set to the placement time
// and moved to the moment every task runs; the attempt records how the
// scheduler placed it (by). A job that is not PENDING gives an error
// wrapping ErrConflict; an allocation of the wrong size, ErrInvalid.
func Place(j *Job, alloc Allocation, masterPort int, t time.Time, by PlacedBy) error {
	if j.State != JobPending {
		return fmt.Errorf("place job %d: job is %s, not PENDING: %w", j.ID, j.State, ErrConflict)
	}
	if len(alloc.Nodes) == 0 || (j.Nodes > 0 && len(alloc.Nodes) != j.Nodes) {
		return fmt.Errorf("place job %d: allocation has %d nodes, job asks for %d: %w",
			j.ID, len(alloc.Nodes), j.Nodes, ErrInvalid)
	}
	a := alloc.Clone()
	j.Alloc = &a
	j.MasterPort = masterPort
	j.State, j.Reason = JobConfiguring, string(ReasonNone)
	j.StartTime, j.EndTime = t, time.Time{}
	j.ExitCode, j.ExitSignal = 0, 0
	j.Tasks = make([]Task, len(a.Nodes))
	for i, n := range a.Nodes {
		j.Tasks[i] = Task{Rank: i, Node: n.Node, State: TaskAssigned}
	}
	j.Attempts = append(j.Attempts, Attempt{Attempt: j.Attempt, Alloc: a.Clone(), StartTime: t, PlacedBy: by})
	return nil
}

// releaseIfEnded closes the record of the current attempt once every task
// has ended: the attempt no longer holds resources. It records how the job
// stood at that moment (a preempted job is requeued right after).
func releaseIfEnded(j *Job) {
	if j.Alloc == nil || j.Live() || len(j.Attempts) == 0 {
		return
	}
	a := &j.Attempts[len(j.Attempts)-1]
	if a.Attempt != j.Attempt || a.Released() {
		return
	}
	a.EndTime = lastTaskEnd(j)
	a.State, a.Reason = j.State, j.Reason
	a.ExitCode, a.ExitSignal = j.ExitCode, j.ExitSignal
}

// Cancel cancels a job that has not ended, or one that would come back: being
// preempted or requeued, or to be restarted once the tasks of its failed
// attempt have stopped (RestartPending). It then stays cancelled instead
// of going back to the queue. A placed job's tasks keep their
// resources until their agents report them ended (the controller tells the
// agents to stop them). A job whose tasks ran ends with Slurm's exit
// status of a cancelled job, 0:15 (the SIGTERM its tasks are sent); one
// that never ran keeps 0:0. It reports whether the job changed.
func Cancel(j *Job, t time.Time, reason string) (changed bool) {
	if j.State.Terminal() && !j.State.ComingBack() && !j.RestartPending() {
		return false
	}
	if j.Live() {
		j.ExitCode, j.ExitSignal = 0, SigTerm
	}
	finish(j, JobCancelled, reason, t)
	return true
}

// SigTerm is SIGTERM's number on Linux: what a cancelled job's tasks are
// sent first.
const SigTerm = 15

// NodeLost records that node went down: the job's unended tasks on it are
// LOST, and a job that has not ended and was allocated on the node ends in
// NODE_FAIL with reason. fenced says that nothing of those tasks runs any
// more (the node was silent past its lease, and its tasks stop by
// themselves at the lease's end): the attempt is the node's fault and may
// restart elsewhere. Otherwise (a node whose agent does not fence, lost or
// set DOWN) the tasks may still run, and the attempt is never restarted. It reports whether the job changed.
func NodeLost(j *Job, node string, t time.Time, reason string, fenced bool) (changed bool) {
	if j.Alloc == nil {
		return false
	}
	onNode := false
	for i := range j.Tasks {
		task := &j.Tasks[i]
		if task.Node != node {
			continue
		}
		onNode = true
		if task.State.Ended() {
			continue
		}
		endTask(task, TaskReport{State: TaskLost, Message: reason, Time: t})
		if fenced {
			// The loss of this node is why the attempt failed, not the
			// fenced task that ended it first.
			fillFault(j, node, reason)
		} else {
			unfenced(j)
		}
		changed = true
	}
	if onNode && !j.State.Terminal() && j.State != JobPending {
		finish(j, JobNodeFail, reason, t)
		changed = true
	}
	if changed {
		releaseIfEnded(j)
		requeueIfStopped(j)
		restartIfFailed(j) // the lost node's tasks may have been the last to end
	}
	return changed
}

// fillFault puts node at fault for the job's current attempt when a node
// cause that named no node ended it first (a fenced task, an agent's
// shutdown: see blame), and makes reason, why node failed, the job's and
// so the attempt's. A job cancelled since keeps the cancel's reason: it
// ended because it was cancelled, and does not restart.
func fillFault(j *Job, node, reason string) {
	if blame(j, RestartNode, node) && j.State == JobNodeFail {
		j.Reason = reason
	}
}

// NodeDowned records that an administrator set node DOWN under a job whose
// tasks there stop by themselves (the node fences: its agent stops them
// when it hears of the DOWN, its lease ends if it does not): the job's
// attempt ends in NODE_FAIL with reason, the node at fault, and its tasks
// there end when their agent reports them, or when the node is found
// silent (NodeLost, fenced). Once every task has ended, the job restarts
// as its policy says, as Slurm requeues the jobs of a node set DOWN. It
// reports whether the job changed.
func NodeDowned(j *Job, node string, t time.Time, reason string) (changed bool) {
	if j.Alloc == nil || j.State.Terminal() || j.State == JobPending {
		return false
	}
	for _, task := range j.Tasks {
		if task.Node == node && !task.State.Ended() {
			blame(j, RestartNode, node)
			finish(j, JobNodeFail, reason, t)
			return true
		}
	}
	return false
}

// Preempt ends a placed job's attempt to make room for another job, the
// pending attempt forJob: the job becomes PREEMPTED, which tells the agents
// to stop its tasks (with the preemption grace period), and it is requeued
// (see Requeue) as soon as every task has ended. The attempt records
// forJob (Attempt.PreemptedFor), so that the scheduler keeps the resources
// it frees for that job rather than let another take them. A job that is
// not CONFIGURING or RUNNING is left alone. It reports whether the job
// changed.
func Preempt(j *Job, t time.Time, forJob JobAttempt) (changed bool) {
	if j.State != JobConfiguring && j.State != JobRunning {
		return false
	}
	if n := len(j.Attempts); n > 0 && j.Attempts[n-1].Attempt == j.Attempt {
		j.Attempts[n-1].PreemptedFor = forJob
	}
	return stopToRequeue(j, JobPreempted, ReasonPreempted, t)
}

// stopToRequeue moves a placed job that has not ended to state (PREEMPTED
// or REQUEUED), from which it goes back to the queue once its tasks have
// ended (at once when none runs). It reports whether the job changed.
func stopToRequeue(j *Job, state JobState, reason string, t time.Time) bool {
	if j.State != JobConfiguring && j.State != JobRunning {
		return false
	}
	finish(j, state, reason, t)
	releaseIfEnded(j)
	requeueIfStopped(j)
	return true
}

// requeueIfStopped requeues a preempted or requeued job whose tasks have
// all ended. A preempted job that may not be requeued ends CANCELLED
// instead, as Slurm's PreemptMode=REQUEUE cancels a job it cannot requeue.
func requeueIfStopped(j *Job) {
	switch {
	case j.Live():
	case j.State == JobPreempted && j.Restart.MaxRestarts == 0:
		j.State, j.Reason = JobCancelled, ReasonPreemptedNoRequeue
		j.ExitCode, j.ExitSignal = 0, SigTerm
	case j.State == JobPreempted:
		Requeue(j, ReasonPreempted)
	case j.State == JobRequeued:
		Requeue(j, ReasonRequeued)
	}
}

// ReasonRequeued is the pending reason of a job scontrol requeue put back.
const ReasonRequeued = "Requeued"

// RequestRequeue stops a running job to put it back in the queue (scontrol
// requeue): REQUEUED until its tasks have ended, then PENDING, same ID,
// next attempt. It reports whether the job changed: only a placed job
// that has not ended is requeued.
func RequestRequeue(j *Job, t time.Time) (changed bool) {
	return stopToRequeue(j, JobRequeued, ReasonRequeued, t)
}

// Requeue puts a job back in the queue for its next attempt: PENDING, with
// the attempt number raised and the allocation, tasks, times and exit status
// of the last attempt cleared. It keeps its ID and submit time; Requeued
// makes it go first in its priority class.
func Requeue(j *Job, reason string) {
	j.State, j.Reason = JobPending, reason
	j.Attempt++
	j.Requeued = true
	j.Alloc, j.Tasks, j.MasterPort = nil, nil, 0
	j.StartTime, j.EndTime = time.Time{}, time.Time{}
	j.ExitCode, j.ExitSignal = 0, 0
	j.CheckpointPending = nil // the next attempt writes its own steps
	j.SignalRequests = nil    // they were for the attempt that ended
}

// NodeUsage is what live jobs hold on one node. GPUs are sorted indices.
type NodeUsage struct {
	GPUs     []int
	CPUs     int
	MemoryMB int64
	// Jobs counts the live jobs on the node; Exclusive: one of them holds
	// it whole; Completing: one of them has ended while its tasks still
	// stop (Job.Completing).
	Jobs       int
	Exclusive  bool
	Completing bool
}

// Usage sums the resources held by live jobs (see Job.Live), per node. A
// job's whole allocation is held until every one of its tasks has ended.
func Usage(jobs []*Job) map[string]NodeUsage {
	out := map[string]NodeUsage{}
	for _, j := range jobs {
		if !j.Live() {
			continue
		}
		for _, a := range j.Alloc.Nodes {
			u := out[a.Node]
			u.GPUs = append(u.GPUs, a.GPUs...)
			u.CPUs += a.CPUs
			u.MemoryMB += a.MemoryMB
			u.Jobs++
			u.Exclusive = u.Exclusive || j.Exclusive
			u.Completing = u.Completing || j.Completing()
			out[a.Node] = u
		}
	}
	for _, u := range out {
		sort.Ints(u.GPUs)
	}
	return out
}
