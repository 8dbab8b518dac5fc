package nodeagent

import (
	"encoding/json"
	"os"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/internal/durable"
)

// A task's time limit counts from its start, and may change while it runs
// (scontrol update JobId= TimeLimit=): the controller sends the job again
// with its new limit, reconcile hands it to the task's supervisor
// (followLimit), which moves the deadline (limitWatch) and rewrites the
// task's record, so that a later run of the agent that takes the task over
// enforces the new limit too. A limit shorter than the time the task has
// run stops it at once, TIMEOUT.

// limitWatch is a supervisor's view of its task's time limit: when it
// runs out, and when the job's --signal is due before that.
type limitWatch struct {
	clock    Clock
	started  time.Time // the limit counts from here
	signal   cluster.JobSignal
	limit    time.Duration    // zero: none
	deadline <-chan time.Time // receives when the limit is reached; nil: no limit
	warn     <-chan time.Time // receives when the --signal is due; nil: none due
	sent     bool             // the --signal was sent: it is not sent again
}

func newLimitWatch(clock Clock, started time.Time, limit time.Duration, signal cluster.JobSignal) *limitWatch {
	w := &limitWatch{clock: clock, started: started, signal: signal}
	w.set(limit)
	return w
}

// set makes limit the task's limit (zero: none), counted from its start:
// the deadline moves, to now if the task has run longer, and so does the
// --signal due before it, unless it was sent already (Slurm sends it once).
func (w *limitWatch) set(limit time.Duration) {
	w.limit, w.deadline, w.warn = limit, nil, nil
	if limit <= 0 {
		return
	}
	w.deadline = w.clock.After(w.left(limit))
	if w.signal.Signal != 0 && !w.sent {
		w.warn = w.clock.After(w.left(limit - w.signal.Before))
	}
}

// left is the time from now until d after the start; zero once it passed.
func (w *limitWatch) left(d time.Duration) time.Duration {
	return max(w.started.Add(d).Sub(w.clock.Now()), 0)
}

// warned records that the --signal was sent.
func (w *limitWatch) warned() { w.sent, w.warn = true, nil }

// followLimit hands a task's supervisor its job's time limit when an
// assignment brings a new one; a.mu is held. Only reconcile sends on
// limitCh, so replacing a limit not yet taken never blocks.
func (a *Agent) followLimit(t *task, as assignment) {
	if !as.hasJob || t.limit < 0 || as.job.timeLimit == t.limit {
		return
	}
	t.limit = as.job.timeLimit
	select {
	case <-t.limitCh: // not taken yet: the newer one replaces it
	default:
	}
	t.limitCh <- t.limit
}

// changeLimit makes limit the running task's time limit, in its record too.
func (a *Agent) changeLimit(t *task, w *limitWatch, limit time.Duration) {
	a.log.Info("the job's time limit changed", "task", t.key, "from", cluster.FormatLimit(w.limit), "to", cluster.FormatLimit(limit))
	w.set(limit)
	if err := a.recordLimit(t.key, limit); err != nil {
		a.log.Warn("recording the task's new time limit; a restart of the agent would enforce the old one", "task", t.key, "err", err)
	}
}

// recordLimit rewrites the time limit in the task's record.
func (a *Agent) recordLimit(key taskKey, limit time.Duration) error {
	b, err := os.ReadFile(a.taskRecordPath(key))
	if err != nil {
		return err
	}
	var rec taskRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return err
	}
	rec.TimeLimitSeconds = int64(limit / time.Second)
	if b, err = json.Marshal(rec); err != nil {
		return err
	}
	return durable.WriteFile(a.taskRecordPath(key), b, 0o600)
}
