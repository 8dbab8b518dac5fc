package scheduler

import (
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Options tune a pass. The zero value is valid: every zero field takes the
// default documented on it.
type Options struct {
	// ReserveDepth is how many blocked jobs, in priority order, get a
	// reservation that lower jobs may not delay. 0 means 100 (what Slurm
	// calls bf_max_job_test is larger, but only the head of the queue needs
	// protecting and each reservation costs a scan of the candidates);
	// negative means none (plain first-fit, no backfill protection).
	ReserveDepth int
	// DefaultSwitchWait is how long a job with Switches=N and no
	// SwitchesWait waits for a placement on at most N leaves. 0 means five
	// minutes (Slurm's max_switch_wait default).
	DefaultSwitchWait time.Duration
	// FairShare, when set, adds a per-job term to the priority score (see
	// Priority); it must be a pure function of the job.
	FairShare func(*cluster.Job) int64
	// QueueDepth, when above 0, limits the pass to the first QueueDepth
	// pending jobs in priority order (Slurm's default_queue_depth): a quick
	// pass after an event, whose cost does not grow with the queue. The
	// jobs below get no decision (no entry in Plan.Pending); a full pass
	// (QueueDepth 0) decides every job.
	QueueDepth int
	// MasterPortMin and MasterPortMax are the range MASTER_PORT is chosen
	// from for each placement (ports.go); 0 chooses none.
	MasterPortMin, MasterPortMax int
	// PreemptGrace and KillGrace are how long the tasks of a job whose
	// attempt has ended (preempted; cancelled, requeued, timed out) have
	// before they are killed: its capacity is taken as free at its end plus
	// that, or at its time limit if sooner; a preempted job with --signal
	// has both, PreemptGrace after its signal and KillGrace after SIGTERM.
	// Zero: at its time limit.
	PreemptGrace, KillGrace time.Duration
}

const (
	defaultReserveDepth = 100
	defaultSwitchWait   = 5 * time.Minute
)

func (o Options) withDefaults() Options {
	if o.ReserveDepth == 0 {
		o.ReserveDepth = defaultReserveDepth
	}
	if o.ReserveDepth < 0 {
		o.ReserveDepth = 0
	}
	if o.DefaultSwitchWait <= 0 {
		o.DefaultSwitchWait = defaultSwitchWait
	}
	return o
}
