package nodeagent

import (
	"slices"

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
// the controller has recorded their end.
func (a *Agent) reconcile(msg *phalanxv1.Assignments) {
	if r := msg.GetResumed(); r != nil {
		a.forgetEvents(r.AsTime()) // before the gate of any task it brings
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping {
		return
	}
	seen := make(map[taskKey]bool, len(msg.GetAssignments()))
	for _, w := range msg.GetAssignments() {
		as := assignmentFromWire(w)
		seen[as.key] = true
		a.reconcileOne(as)
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

// reconcileOne applies one assignment; a.mu is held.
func (a *Agent) reconcileOne(as assignment) {
	key := as.key
	t, running := a.tasks[key]
	if running && !as.stop {
		a.queueSignals(t, as.signals)
		a.followLimit(t, as)
	}
	switch {
	case as.stop && running:
		t.stop(a.stopRequest(as))
	case as.stop && !a.finished[key]:
		a.finished[key] = true
		a.log.Info("task stopped before it started", "task", key, "reason", as.stopReason)
		a.rep.report(a.taskReport(key, cluster.TaskKilled, "stopped before it started: "+as.stopReason))
	case as.stop || running || a.finished[key]:
	case startedElsewhere(as) || a.leftover[attemptKey{job: key.job, attempt: key.attempt}]:
		// The controller saw this task start, or an earlier run of this
		// agent left its folder (it may have died between starting the task
		// and reporting it), but this agent does not run it. Starting it
		// again could run two copies; until tasks are re-adopted, report it
		// lost.
		delete(a.leftover, attemptKey{job: key.job, attempt: key.attempt})
		a.finished[key] = true
		a.log.Warn("task started by an earlier agent run; reporting it lost", "task", key)
		a.rep.report(a.taskReport(key, cluster.TaskLost, "node agent restarted while the task ran"))
	default:
		t := newTask(key)
		t.limit = as.job.timeLimit
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
