package codec

import (
	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// HoldRecord is a hold's persisted form.
func HoldRecord(h cluster.Hold) statev1.Hold {
	switch h {
	case cluster.HoldUser:
		return statev1.Hold_HOLD_USER
	case cluster.HoldAdmin:
		return statev1.Hold_HOLD_ADMIN
	}
	return statev1.Hold_HOLD_UNSPECIFIED
}

// FromHoldRecord decodes a hold; one this version does not know holds the
// job as an operator would (only an operator releases it).
func FromHoldRecord(h statev1.Hold) cluster.Hold {
	switch h {
	case statev1.Hold_HOLD_UNSPECIFIED:
		return cluster.HoldNone
	case statev1.Hold_HOLD_USER:
		return cluster.HoldUser
	}
	return cluster.HoldAdmin
}

// SignalScopeRecord is a signal scope's persisted form.
func SignalScopeRecord(s cluster.SignalScope) statev1.SignalScope {
	switch s {
	case cluster.SignalBatch:
		return statev1.SignalScope_SIGNAL_SCOPE_BATCH
	case cluster.SignalFull:
		return statev1.SignalScope_SIGNAL_SCOPE_FULL
	case cluster.SignalStep:
		return statev1.SignalScope_SIGNAL_SCOPE_STEP
	}
	return statev1.SignalScope_SIGNAL_SCOPE_UNSPECIFIED
}

// FromSignalScopeRecord decodes a signal scope; one this version does not
// know is the default (the job's processes but the batch script).
func FromSignalScopeRecord(s statev1.SignalScope) cluster.SignalScope {
	switch s {
	case statev1.SignalScope_SIGNAL_SCOPE_BATCH:
		return cluster.SignalBatch
	case statev1.SignalScope_SIGNAL_SCOPE_FULL:
		return cluster.SignalFull
	case statev1.SignalScope_SIGNAL_SCOPE_STEP:
		return cluster.SignalStep
	}
	return cluster.SignalSteps
}
