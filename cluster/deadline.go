package cluster

import "time"

// CheckBeginDeadline refuses, as Slurm's sbatch does, a --begin after the
// --deadline and a deadline already passed at now (zero now: not
// checked); zero times are unset.
func CheckBeginDeadline(begin, deadline, now time.Time) error {
	switch {
	case deadline.IsZero():
		return nil
	case !begin.IsZero() && begin.After(deadline):
		return Errorf(ErrInvalid, "Incompatible begin and deadline time specification: --begin %s is after --deadline %s",
			begin.Format(time.RFC3339), deadline.Format(time.RFC3339))
	case !now.IsZero() && !deadline.After(now):
		return Errorf(ErrInvalid, "Requested time limit is invalid (missing or exceeds some limit): --deadline %s has passed",
			deadline.Format(time.RFC3339))
	}
	return nil
}
