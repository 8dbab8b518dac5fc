package fsm

import (
	"fmt"
	"io"

	"github.com/hashicorp/raft"

	"github.com/phalanx-hpc/phalanx/store"
)

// FSM applies committed log entries to the store.
type FSM struct {
	store     *store.Store
	fatal     func(error)
	restored  func(index uint64)
	snapIndex func() (uint64, error)
}

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// New returns the state machine of a replica whose state is st.
func New(st *store.Store, opts ...Option) *FSM {
	f := &FSM{store: st, fatal: func(err error) { panic(err) }}
	for _, o := range opts {
		o(f)
	}
	return f
}

// Option is an optional setting of New.
type Option func(*FSM)

// OnFatal sets what stops the replica when an entry cannot be applied (a
// command this version does not know, a disk error): fatal is called with
// the error and must not return. The default panics.
func OnFatal(fatal func(error)) Option { return func(f *FSM) { f.fatal = fatal } }

// OnRestore sets what is called after the store was replaced by a
// snapshot (a leader's, sent to a follower too far behind its log, or an
// administrator's restore), with the index the state is now at.
func OnRestore(restored func(index uint64)) Option {
	return func(f *FSM) { f.restored = restored }
}

// SnapshotIndex sets how Restore learns the Raft index of the snapshot it
// restores, which raft.FSM's Restore is not given: Raft stores a snapshot
// before it restores it, so it is the newest in its snapshot store. Without
// it, a restored state keeps the applied index it holds, which for an
// administrator's backup is the index of the cluster it was taken on.
func SnapshotIndex(index func() (uint64, error)) Option {
	return func(f *FSM) { f.snapIndex = index }
}

// Apply implements raft.FSM.
func (f *FSM) Apply(l *raft.Log) any {
	return f.apply(l)
}

// ApplyBatch implements raft.BatchingFSM: the entries are applied in order,
// and the store commits them to disk together.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	for i, l := range logs {
		out[i] = f.apply(l)
	}
	return out
}

// apply decodes one entry and makes its one store call. An entry this
// binary cannot decode, or that the store could not apply for a local
// reason (a disk error), stops the replica: going on would silently drop a
// committed entry here, and a restart replays the log.
func (f *FSM) apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil // configuration changes and no-ops are Raft's own
	}
	c, err := Decode(l.Data)
	if err != nil {
		f.fatal(fmt.Errorf("raft log entry %d: %w", l.Index, err))
		return nil
	}
	res := c.apply(f.store, l.Index)
	if res.Err != nil && !store.IsRejection(res.Err) {
		f.fatal(fmt.Errorf("raft log entry %d: apply %T: %w", l.Index, c, res.Err))
		return nil
	}
	return res
}

// Snapshot implements raft.FSM. The store writes a consistent copy of its
// database when Raft persists the snapshot; entries applied in between are
// harmless, since the store skips the indexes it has already applied.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &snapshot{store: f.store}, nil
}

// Restore implements raft.FSM: the store swaps in the snapshot's database.
func (f *FSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	var index uint64
	if f.snapIndex != nil {
		var err error
		if index, err = f.snapIndex(); err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
		}
	}
	if err := f.store.Restore(r, index); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	if f.restored != nil {
		f.restored(f.store.AppliedIndex())
	}
	return nil
}

type snapshot struct {
	store *store.Store
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.store.Snapshot(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *snapshot) Release() {}
