package nodeagent

import (
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// reconcile makes the node's tasks match one Assignments message, the
// complete set the node should run. It is level-triggered and idempotent:
// applying the same message twice does nothing the second time.
//
//   - an assignment not marked stop whose task neither runs nor ended here
//     is launched;
//
//   - a stop assignment stops its task if it runs; one never started here
//     is reported KILLED at once, so the controller can release it;
//
//   - a task that runs here but is missing from the set is stopped.
//
//   - a task the controller already has as running, or whose attempt
//     folder an earlier run of this agent left behind, but that does not
//     run here, was started by an earlier run of this agent: it is reported
//     LOST rather than started twice.
//
// Tasks that ended here are remembered (and never started again under the
// same job, attempt and rank) until they leave the set, which happens once
// the controller has recorded their end. One still in a set read at a
// higher index than the controller acknowledged its end at has been
// forgotten: the controller's state was replaced by an older one (an
// administrator's restore). Of the same placement (the controller saw it
// start, or placed it at the same index), the end is reported again; of
// another, the task is what the controller now asks for, and runs.
//
// An end the controller rejected because it had no such job (its state
// was replaced by one without it, and the task stopped as no longer
// assigned) can never be recorded. When a set read after that holds the
// task again (a state restored from before its end), it is reported LOST
// if of the same placement, so that the attempt ends NODE_FAIL and the job
// restarts rather than run for ever with no process; of another placement
// it runs.
//
// A task never starts on a GPU that another task here still holds: it
// waits until that one has ended (the controller places nothing on GPUs
// it has not seen released, so only a replaced state makes one wait). A
// task that runs here under another placement than the set's, of the same
// job, attempt and rank, is of a replaced state: it is stopped without a
// report (its end would be taken for the new one's), and the new one waits
// for its end.
func (a *Agent) reconcile(msg *phalanxv1.Assignments) {
	if r := msg.GetResumed(); r != nil {
		a.forgetEvents(r.AsTime()) // before the gate of any task it brings
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last = msg
	a.reconcileLocked(msg)
}

// reconcileLocked is reconcile with a.mu held: also run again, on the last
// set, when a task that others wait for ends.
func (a *Agent) reconcileLocked(msg *phalanxv1.Assignments) {
	if a.stopping {
		return
	}
	waited := a.waiting
	a.waiting = nil
	seen := make(map[taskKey]bool, len(msg.GetAssignments()))
	for _, w := range msg.GetAssignments() {
		as := assignmentFromWire(w)
		seen[as.key] = true
		a.reconcileOne(as, msg.GetIndex(), waited)
	}
	for key, t := range a.tasks {
		if !seen[key] {
			t.stop(stopRequest{state: cluster.TaskKilled, grace: a.cfg.KillGrace, msg: "no longer assigned to this node"})
		}
	}
	for key := range a.finished {
		if !seen[key] {
			delete(a.finished, key)
		}
	}
}

// reconcileOne applies one assignment of a set read at index; waited
// holds the tasks that waited for others at the last pass. a.mu is held.
func (a *Agent) reconcileOne(as assignment, index uint64, waited map[taskKey]bool) {
	key := as.key
	t, running := a.tasks[key]
	if running && t.placed != 0 && as.job.placed != 0 && t.placed != as.job.placed {
		if !t.replaced {
			t.replaced = true
			a.log.Warn("task runs here under a placement the controller no longer has; stopping it, unreported, for the new one",
				"task", key, "placed", t.placed, "new_placed", as.job.placed)
			t.stop(stopRequest{state: cluster.TaskKilled, grace: a.cfg.KillGrace, msg: "replaced by another placement"})
		}
		a.wait(key)
		return
	}
	if running && !as.stop {
		a.queueSignals(t, as.signals)
		a.followLimit(t, as)
	}
	if e := a.finished[key]; e != nil && !running && e.forgotten(index) {
		switch {
		case !e.samePlacement(as):
			a.log.Warn("the controller placed again, in a restored state, a task that ended here; taking it as the new one",
				"task", key, "placed", as.job.placed, "ended_placed", e.placed)
			delete(a.finished, key)
		case e.rejected:
			a.log.Warn("a restored state has again a task whose end the controller rejected, not having its job; reporting it lost",
				"task", key, "state", e.report.State)
			msg := "ended while the controller's state did not have its job (" + e.report.State
			if e.report.Message != "" {
				msg += ": " + e.report.Message
			}
			a.remember(key, e.placed, a.taskReport(key, cluster.TaskLost, msg+")"), true)
			return
		default:
			a.log.Warn("the controller no longer has the end of a task that ended here (its state was restored?); reporting it again",
				"task", key, "state", e.report.State)
			a.remember(key, e.placed, proto.Clone(e.report).(*phalanxv1.ReportTaskStatusRequest), false)
			return
		}
	}
	switch {
	case as.stop && running:
		t.stop(a.stopRequest(as))
	case as.stop && a.finished[key] == nil:
		a.log.Info("task stopped before it started", "task", key, "reason", as.stopReason)
		a.remember(key, as.job.placed, a.taskReport(key, cluster.TaskKilled, "stopped before it started: "+as.stopReason), true)
	case as.stop || running || a.finished[key] != nil:
	case startedElsewhere(as) || a.leftover[attemptKey{job: key.job, attempt: key.attempt}]:
		// The controller saw this task start, or an earlier run of this
		// agent left its folder (it may have died between starting the task
		// and reporting it), but this agent does not run it. Starting it
		// again could run two copies; until tasks are re-adopted, report it
		// lost.
		delete(a.leftover, attemptKey{job: key.job, attempt: key.attempt})
		a.log.Warn("task started by an earlier agent run; reporting it lost", "task", key)
		a.remember(key, as.job.placed, a.taskReport(key, cluster.TaskLost, "node agent restarted while the task ran"), true)
	default:
		gpus := as.job.gpusOf(key.rank)
		if holder := a.holding(gpus); holder != nil {
			if !waited[key] {
				a.log.Warn("task waits for its GPUs, which a task of a replaced state still holds", "task", key, "gpus", gpus, "held_by", holder.key)
			}
			a.wait(key)
			return
		}
		t := newTask(key)
		t.limit, t.placed, t.gpus = as.job.timeLimit, as.job.placed, gpus
		a.tasks[key] = t
		a.queueSignals(t, as.signals) // requests made before it started: delivered once it runs
		a.taskWG.Add(1)
		go a.runTask(t, as)
	}
}

// stopRequest is how a stop assignment asks to stop its task.
func (a *Agent) stopRequest(as assignment) stopRequest {
	grace := a.cfg.KillGrace
	if as.grace > 0 {
		grace = as.grace
	}
	msg := "stopped by the controller"
	if as.stopReason != "" {
		msg += ": " + as.stopReason
	}
	r := stopRequest{state: cluster.TaskKilled, grace: grace, msg: msg}
	if as.stopReason == string(cluster.JobPreempted) { // Slurm's send_user_signal
		r.jobSignal = as.job.signal
	}
	return r
}

// startedElsewhere reports whether the controller has the assignment's task
// as starting or running already.
func startedElsewhere(as assignment) bool {
	return slices.Contains(as.job.startedRanks, int(as.key.rank))
}

// ended is what the agent remembers of a task that ended here, until the
// controller has recorded its end.
type ended struct {
	report *phalanxv1.ReportTaskStatusRequest // the final one
	placed uint64                             // the placement it ended under (0: not said)
	// recorded: the controller's index once it acknowledged the report
	// (0: not yet, or a controller that does not say); with rejected, the
	// index of the newest set the agent had when the controller rejected it.
	recorded uint64
	// rejected: the controller rejected the report, having no such job.
	rejected bool
}

// forgotten reports whether a set read at index that still holds the task
// shows the controller has lost its end: it had recorded it at a lower
// index, or had no such job when the agent's newest set was at a lower
// index. A set read before that (an older stream's) proves nothing.
func (e *ended) forgotten(index uint64) bool {
	return (e.rejected || e.recorded != 0) && index > e.recorded
}

// samePlacement reports whether as is the placement the task ended under:
// the same placing index, or, where either is not said, one the controller
// saw start.
func (e *ended) samePlacement(as assignment) bool {
	if e.placed != 0 && as.job.placed != 0 {
		return e.placed == as.job.placed
	}
	return startedElsewhere(as)
}

// remember records that the task key, of the placement placed, ended with
// its final report req, and queues req (stamped now when stamp is set, as
// it was made otherwise); a.mu is held.
func (a *Agent) remember(key taskKey, placed uint64, req *phalanxv1.ReportTaskStatusRequest, stamp bool) {
	e := &ended{report: req, placed: placed}
	a.finished[key] = e
	answered := func(index uint64, err error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		switch {
		case err == nil:
			e.recorded = index
		case status.Code(err) == codes.NotFound: // no such job: the end can never be recorded
			e.rejected, e.recorded = true, a.last.GetIndex()
		}
	}
	if stamp {
		a.rep.reportAnswered(req, answered)
	} else {
		a.rep.resend(req, answered)
	}
}

// wait records that the task key waits for another to end; a.mu is held.
func (a *Agent) wait(key taskKey) {
	if a.waiting == nil {
		a.waiting = make(map[taskKey]bool)
	}
	a.waiting[key] = true
}

// holding returns a task here that holds one of gpus, or nil; a.mu is
// held. A task taken over from an earlier run, whose GPUs are not known,
// holds none that can be told.
func (a *Agent) holding(gpus []int) *task {
	for _, t := range a.tasks {
		for _, g := range t.gpus {
			if slices.Contains(gpus, g) {
				return t
			}
		}
	}
	return nil
}
