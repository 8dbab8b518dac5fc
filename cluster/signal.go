package cluster

import "time"

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
