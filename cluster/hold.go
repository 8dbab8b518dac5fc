package cluster

import "time"

// Holds (sbatch --hold, scontrol hold, uhold, release). A held job stays
// PENDING and is never scheduled until released: with reason JobHeldUser
// when its user held it (the user may release it), JobHeldAdmin when an
// operator did (only an operator may release it). Only a pending job can be
// held.

// Hold is who holds a pending job back.
type Hold uint8

// Holds.
const (
	HoldNone  Hold = iota
	HoldUser       // JobHeldUser
	HoldAdmin      // JobHeldAdmin
)

// Pending reasons of held jobs (Slurm's), and of jobs whose --begin time
// has not come.
const (
	ReasonJobHeldUser  PendingReason = "JobHeldUser"
	ReasonJobHeldAdmin PendingReason = "JobHeldAdmin"
	ReasonBeginTime    PendingReason = "BeginTime"
)

// Reason is the pending reason of a job held so; "" for none.
func (h Hold) Reason() PendingReason {
	switch h {
	case HoldUser:
		return ReasonJobHeldUser
	case HoldAdmin:
		return ReasonJobHeldAdmin
	}
	return ""
}

// ReasonDeadline is the reason of a job ended by its --deadline (Slurm's).
const ReasonDeadline = "DeadLine"

// MissedDeadline reports whether pending job j, started at t, could not
// end before its --deadline: t plus its time limit is past it (a job
// without a limit never ends in time). As in Slurm, a held job waits for
// its release first: its deadline is looked at once the scheduler would
// start it.
func MissedDeadline(j *Job, t time.Time) bool {
	if j.State != JobPending || j.Deadline.IsZero() || j.Hold != HoldNone {
		return false
	}
	return j.TimeLimit <= 0 || t.Add(j.TimeLimit).After(j.Deadline)
}

// MissDeadline ends pending job j as DEADLINE when it could no longer end
// before its --deadline at t. It reports whether the job changed.
func MissDeadline(j *Job, t time.Time) (changed bool) {
	if !MissedDeadline(j, t) {
		return false
	}
	finish(j, JobDeadline, ReasonDeadline, t)
	return true
}
