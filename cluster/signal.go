package cluster

import (
	"slices"
	"time"
)

// JobSignal is sbatch's --signal=[B:]SIG[@SECONDS]: Signal is sent Before
// the time limit, and at once when the job is preempted (Slurm's
// PreemptParameters=send_user_signal), to the job's processes but the
// batch script, or with Batch to the batch script alone. A zero Signal:
// none.
type JobSignal struct {
	Signal int
	Before time.Duration
	Batch  bool
}

// Signal bounds: the signal numbers of Linux, and Slurm's longest lead.
const (
	MaxSignal         = 64
	MaxSignalBefore   = 65535 * time.Second
	DefaultSignalTime = 60 * time.Second
)

// Validate says what is wrong with s.
func (s JobSignal) Validate() error {
	switch {
	case s.Signal < 0 || s.Signal > MaxSignal:
		return Errorf(ErrInvalid, "--signal: signal %d: give 1 to %d, or a name such as USR1", s.Signal, MaxSignal)
	case s.Before < 0 || s.Before > MaxSignalBefore:
		return Errorf(ErrInvalid, "--signal: @%d: give 0 to 65535 seconds", s.Before/time.Second)
	}
	return nil
}

// Signals on request (scancel --signal). A request to signal a running job
// is recorded in the job, numbered, and reaches its agents with their
// assignments; each agent delivers each request once to its task, and
// remembers the last one it delivered across its own restarts. Requests
// belong to an attempt: a requeue forgets them.

// SignalScope is which processes of a task a requested signal reaches.
type SignalScope uint8

// Signal scopes (scancel's).
const (
	SignalSteps SignalScope = iota // the job's processes but the batch script (the default)
	SignalBatch                    // -b/--batch: the batch script alone
	SignalFull                     // -f/--full: every process, the batch script included
	SignalStep                     // JOBID.STEP: the tasks of one step srun runs in the batch script
)

// SignalRequest is one scancel --signal on a job: its number in the
// attempt (from 1), the signal and its scope, and with SignalStep, the
// step (scancel JOBID.STEP; a cancel of a step is its SIGTERM).
type SignalRequest struct {
	Seq    uint32
	Signal int
	Scope  SignalScope
	Step   uint32
}

// MaxSignalRequests is how many requests a job keeps; older ones are
// forgotten (their agents have delivered them long since).
const MaxSignalRequests = 16

// RequestSignal records a request r (numbered here) to signal a placed job
// that has not ended. It reports whether the job changed: a pending or
// ended job has no process to signal.
func RequestSignal(j *Job, r SignalRequest) (changed bool) {
	if j.State != JobConfiguring && j.State != JobRunning {
		return false
	}
	var seq uint32 = 1
	if n := len(j.SignalRequests); n > 0 {
		seq = j.SignalRequests[n-1].Seq + 1
	}
	r.Seq = seq
	if r.Scope != SignalStep {
		r.Step = 0
	}
	j.SignalRequests = append(j.SignalRequests, r)
	if n := len(j.SignalRequests); n > MaxSignalRequests {
		j.SignalRequests = slices.Delete(j.SignalRequests, 0, n-MaxSignalRequests)
	}
	return true
}
