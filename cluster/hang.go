package cluster

import (
	"fmt"
	"time"
)

// Hangs. A job may name a hang timeout (sbatch --hang-timeout, or the
// cluster's default): the agent of each of its tasks watches the task's
// progress (output written, checkpoint steps committed, its GPUs busy by
// NVML) and, after that long with none, reports a suspected hang. When the
// job's restart policy names the hang cause, the agent stops the task and
// reports it HUNG: the attempt ends FAILED, reason Hang, cause RestartHang,
// and the job restarts. Otherwise the suspicion is logged and the task runs
// on.

// ReasonHang is the reason of a job ended for a suspected hang.
const ReasonHang = "Hang"

// Hang timeout bounds (the reference platforms': 10 minutes to 12 hours).
const (
	MinHangTimeout = 10 * time.Minute
	MaxHangTimeout = 12 * time.Hour
)

// ValidateHangTimeout says what is wrong with a hang timeout d (0: none);
// min is the shortest the cluster takes (MinHangTimeout, shorter in tests).
func ValidateHangTimeout(d, min time.Duration) error {
	if d == 0 {
		return nil
	}
	if d < min || d > MaxHangTimeout {
		return Errorf(ErrInvalid, "--hang-timeout=%s: give %s to %s, or 0 for none", FmtMinutes(d), FmtMinutes(min), FmtMinutes(MaxHangTimeout))
	}
	return nil
}

// FmtMinutes writes a hang timeout as it is given: 12h, 10m, 90s.
func FmtMinutes(d time.Duration) string {
	switch {
	case d%time.Hour == 0 && d > 0:
		return fmt.Sprintf("%dh", int64(d/time.Hour))
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", int64(d/time.Minute))
	}
	return d.String()
}
