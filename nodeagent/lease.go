package nodeagent

import (
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// Leases (runtime.Fencer). An agent whose runtime fences its tasks says so
// when it registers; the controller then grants a lease with every answer
// to its registrations and heartbeats, counted from when the agent sent the
// call (the controller cannot have heard it earlier). The agent hands the
// lease to its runtime, whose supervisors kill the node's tasks once it
// ends with no new one: when no controller has answered for a lease's
// length, because the node is cut off or the agent is gone. The controller
// declares such a node lost only after a longer silence, and then restarts
// its jobs elsewhere: the old attempt is dead by then.

// fences reports whether the agent's runtime fences its tasks, all of
// them: a task taken over from an agent before leases is not.
func (a *Agent) fences() bool {
	if _, ok := a.cfg.Runtime.(runtime.Fencer); !ok {
		return false
	}
	all, ok := a.cfg.Runtime.(interface{ FencesAll() bool })
	return !ok || all.FencesAll()
}

// renewLease records a lease of ms milliseconds that the controller granted
// in answer to a call sent at sent. Without a lease (ms 0) or a runtime
// that fences, it does nothing.
func (a *Agent) renewLease(sent runtime.BootTime, ms int64) {
	f, ok := a.cfg.Runtime.(runtime.Fencer)
	if !ok || ms <= 0 {
		return
	}
	if err := f.Lease(sent.Add(time.Duration(ms) * time.Millisecond)); err != nil {
		// The old lease still ends when it did: the tasks are fenced then.
		a.log.Error("recording the node's lease", "err", err)
	}
}
