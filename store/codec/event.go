package codec

import (
	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

var eventKinds = newEnum("event kind", map[cluster.EventKind]statev1.EventKind{
	cluster.EventRegistered:        statev1.EventKind_EVENT_KIND_REGISTERED,
	cluster.EventDrained:           statev1.EventKind_EVENT_KIND_DRAINED,
	cluster.EventResumed:           statev1.EventKind_EVENT_KIND_RESUMED,
	cluster.EventDown:              statev1.EventKind_EVENT_KIND_DOWN,
	cluster.EventUnhealthy:         statev1.EventKind_EVENT_KIND_UNHEALTHY,
	cluster.EventHealthy:           statev1.EventKind_EVENT_KIND_HEALTHY,
	cluster.EventCheckpoint:        statev1.EventKind_EVENT_KIND_CHECKPOINT,
	cluster.EventHang:              statev1.EventKind_EVENT_KIND_HANG,
	cluster.EventCheckpointSkipped: statev1.EventKind_EVENT_KIND_CHECKPOINT_SKIPPED,
	cluster.EventOutputAppended:    statev1.EventKind_EVENT_KIND_OUTPUT_APPENDED,
	cluster.EventRequeued:          statev1.EventKind_EVENT_KIND_REQUEUED,
})

// Event encodes a node event.
func Event(e cluster.Event) (*statev1.Event, error) {
	kind, err := eventKinds.encode(e.Kind)
	if err != nil {
		return nil, err
	}
	return &statev1.Event{Seq: e.Seq, Time: Time(e.Time), Node: e.Node, Job: uint64(e.Job), Kind: kind, User: e.User, Message: e.Message}, nil
}

// FromEvent decodes a node event.
func FromEvent(r *statev1.Event) (cluster.Event, error) {
	kind, err := eventKinds.decode(r.GetKind())
	if err != nil {
		return cluster.Event{}, err
	}
	return cluster.Event{Seq: r.GetSeq(), Time: FromTime(r.GetTime()), Node: r.GetNode(), Job: cluster.JobID(r.GetJob()), Kind: kind, User: r.GetUser(), Message: r.GetMessage()}, nil
}
