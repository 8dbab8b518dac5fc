package cluster

import "strings"

// PreemptMode is a partition's PreemptMode, as in slurm.conf: whether its
// jobs may be preempted (requeued) for jobs of a higher tier or QoS.
type PreemptMode string

// Preemption modes Phalanx implements (Slurm also has CANCEL, SUSPEND and
// GANG, which it refuses).
const (
	PreemptOff     PreemptMode = "OFF" // the default
	PreemptRequeue PreemptMode = "REQUEUE"
)

// ParsePreemptMode reads a PreemptMode in any case; "" is OFF.
func ParsePreemptMode(s string) (PreemptMode, error) {
	switch m := PreemptMode(strings.ToUpper(s)); m {
	case "", PreemptOff:
		return PreemptOff, nil
	case PreemptRequeue:
		return m, nil
	}
	return "", Errorf(ErrInvalid, "PreemptMode %q: use OFF or REQUEUE", s)
}

// Requeues reports whether the mode lets the partition's jobs be
// preempted.
func (m PreemptMode) Requeues() bool { return strings.EqualFold(string(m), string(PreemptRequeue)) }

// QoS is a job's quality of service: a class above every priority score.
type QoS string

// The QoS levels, lowest first; "" is normal.
const (
	QoSLow    QoS = "low"
	QoSNormal QoS = "normal"
	QoSHigh   QoS = "high"
)

// ParseQoS reads a QoS in any case; "" is normal.
func ParseQoS(s string) (QoS, error) {
	switch q := QoS(strings.ToLower(s)); q {
	case "", QoSNormal:
		return QoSNormal, nil
	case QoSLow, QoSHigh:
		return q, nil
	}
	return "", Errorf(ErrInvalid, "QoS %q: use high, normal or low", s)
}

// Level orders QoS classes: low 0, normal 1, high 2; an unknown or empty
// QoS is normal.
func (q QoS) Level() int {
	switch QoS(strings.ToLower(string(q))) {
	case QoSHigh:
		return 2
	case QoSLow:
		return 0
	}
	return 1
}
