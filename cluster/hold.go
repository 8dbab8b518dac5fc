package cluster

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
	ReasonJobHeldUser  = "JobHeldUser"
	ReasonJobHeldAdmin = "JobHeldAdmin"
	ReasonBeginTime    = "BeginTime"
)

// Reason is the pending reason of a job held so; "" for none.
func (h Hold) Reason() string {
	switch h {
	case HoldUser:
		return ReasonJobHeldUser
	case HoldAdmin:
		return ReasonJobHeldAdmin
	}
	return ""
}
