package controller

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/hashicorp/raft"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

// fsm applies committed commands to the store. It is a dispatch table:
// decode, call one store method with the log index, return its result.
type fsm struct {
	store   *store.Store
	applied func() // called after every applied command (wakes watchers)
}

var _ raft.FSM = (*fsm)(nil)

// applyResult is what Apply returns to the proposer through ApplyFuture.
type applyResult struct {
	IDs []cluster.JobID // placed or cancelled jobs, where the command has them
	Err error
}

type handler func(s *store.Store, idx uint64, body []byte) applyResult

var handlers = map[commandType]handler{
	cmdSubmitJob: func(s *store.Store, idx uint64, body []byte) applyResult {
		var c submitJobCmd
		if err := json.Unmarshal(body, &c); err != nil {
			return applyResult{Err: err}
		}
		return applyResult{Err: s.SubmitJob(idx, c.Job)}
	},
	cmdPlaceJobs: func(s *store.Store, idx uint64, body []byte) applyResult {
		var c placeJobsCmd
		if err := json.Unmarshal(body, &c); err != nil {
			return applyResult{Err: err}
		}
		ids, err := s.PlaceJobs(idx, c.Placements)
		return applyResult{IDs: ids, Err: err}
	},
	cmdReportTask: func(s *store.Store, idx uint64, body []byte) applyResult {
		var c reportTaskCmd
		if err := json.Unmarshal(body, &c); err != nil {
			return applyResult{Err: err}
		}
		return applyResult{Err: s.ReportTask(idx, c.Report)}
	},
	cmdCancelJobs: func(s *store.Store, idx uint64, body []byte) applyResult {
		var c cancelJobsCmd
		if err := json.Unmarshal(body, &c); err != nil {
			return applyResult{Err: err}
		}
		ids, err := s.CancelJobs(idx, c.IDs, c.Time, c.Reason)
		return applyResult{IDs: ids, Err: err}
	},
	cmdRegisterNode: func(s *store.Store, idx uint64, body []byte) applyResult {
		var c registerNodeCmd
		if err := json.Unmarshal(body, &c); err != nil {
			return applyResult{Err: err}
		}
		return applyResult{Err: s.RegisterNode(idx, c.Node)}
	},
	cmdSetNodeState: func(s *store.Store, idx uint64, body []byte) applyResult {
		var c setNodeStateCmd
		if err := json.Unmarshal(body, &c); err != nil {
			return applyResult{Err: err}
		}
		return applyResult{Err: s.SetNodeState(idx, c.Name, c.State, c.Reason, c.Time)}
	},
	cmdPreemptJobs: func(s *store.Store, idx uint64, body []byte) applyResult {
		var c preemptJobsCmd
		if err := json.Unmarshal(body, &c); err != nil {
			return applyResult{Err: err}
		}
		ids, err := s.PreemptJobs(idx, c.IDs, c.Time)
		return applyResult{IDs: ids, Err: err}
	},
	cmdSetNodesDown: func(s *store.Store, idx uint64, body []byte) applyResult {
		var c setNodesDownCmd
		if err := json.Unmarshal(body, &c); err != nil {
			return applyResult{Err: err}
		}
		return applyResult{Err: s.SetNodesDown(idx, c.Names, c.Reason, c.Time)}
	},
	cmdSetPartitions: func(s *store.Store, idx uint64, body []byte) applyResult {
		var c setPartitionsCmd
		if err := json.Unmarshal(body, &c); err != nil {
			return applyResult{Err: err}
		}
		return applyResult{Err: s.SetPartitions(idx, c.Partitions)}
	},
}

// Apply implements raft.FSM.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand || len(l.Data) == 0 {
		return applyResult{}
	}
	t := commandType(l.Data[0])
	h, ok := handlers[t]
	if !ok {
		// A newer replica wrote a command this binary does not know. Applying
		// it partially would fork the state; stopping is the only safe move.
		panic(fmt.Sprintf("raft log index %d: unknown command type %d: upgrade this controller", l.Index, t))
	}
	res := h(f.store, l.Index, l.Data[1:])
	if res.Err != nil && !store.IsRejection(res.Err) {
		// The store could not apply a committed entry (disk full, I/O, a
		// payload this binary cannot decode). Going on would silently drop
		// it on this replica; stopping lets a restart replay the log.
		panic(fmt.Sprintf("raft log index %d: apply command %d: %v", l.Index, t, res.Err))
	}
	if f.applied != nil {
		f.applied()
	}
	return res
}

// Snapshot implements raft.FSM. The store writes a consistent copy of its
// database when raft persists the snapshot; entries applied in between are
// harmless, since the store skips indexes it has already applied.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{store: f.store}, nil
}

// Restore implements raft.FSM: the store swaps in the snapshot's database.
func (f *fsm) Restore(r io.ReadCloser) error {
	defer r.Close()
	if err := f.store.Restore(r); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	if f.applied != nil {
		f.applied()
	}
	return nil
}

type fsmSnapshot struct {
	store *store.Store
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.store.Snapshot(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
