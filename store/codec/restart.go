package codec

import (
	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// restartCauses maps restart causes to their persisted form; a cause not
// in it is persisted as none (and none decodes as RestartNone).
var restartCauses = newTable(map[cluster.RestartCause]statev1.RestartCause{
	cluster.RestartNode:       statev1.RestartCause_RESTART_CAUSE_NODE,
	cluster.RestartExit:       statev1.RestartCause_RESTART_CAUSE_EXIT,
	cluster.RestartHang:       statev1.RestartCause_RESTART_CAUSE_HANG,
	cluster.RestartCheckpoint: statev1.RestartCause_RESTART_CAUSE_CHECKPOINT,
})

func restartCause(c cluster.RestartCause) statev1.RestartCause { return restartCauses.encode(c) }

func fromRestartCause(p statev1.RestartCause) cluster.RestartCause { return restartCauses.decode(p) }

// restartPolicy encodes a job's restart policy; nil for the zero policy.
func restartPolicy(p cluster.RestartPolicy) *statev1.RestartPolicy {
	if p == (cluster.RestartPolicy{}) {
		return nil
	}
	out := &statev1.RestartPolicy{MaxRestarts: int32(p.MaxRestarts)}
	for _, c := range cluster.AllRestartCauses {
		if p.On.Has(c) {
			out.On = append(out.On, restartCause(c))
		}
	}
	return out
}

func fromRestartPolicy(p *statev1.RestartPolicy) cluster.RestartPolicy {
	out := cluster.RestartPolicy{MaxRestarts: int(p.GetMaxRestarts())}
	for _, c := range p.GetOn() {
		if rc := fromRestartCause(c); rc != cluster.RestartNone {
			out.On = out.On.With(rc)
		}
	}
	return out
}
