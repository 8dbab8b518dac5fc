package fsm

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.NoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func entry(t *testing.T, idx uint64, c Command) *raft.Log {
	t.Helper()
	data, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: idx, Type: raft.LogCommand, Data: data}
}

func testJob(id cluster.JobID) *cluster.Job {
	return &cluster.Job{
		ID: id, Name: "j", User: "u", Partition: "gpu", Script: "#!/bin/sh\n", WorkDir: "/tmp",
		Nodes: 1, GPUsPerNode: 1, State: cluster.JobPending, SubmitTime: time.Unix(1000, 0).UTC(),
	}
}

func TestFSMDispatchesAndSkipsReappliedEntries(t *testing.T) {
	st := openStore(t)
	f := New(st)
	res := f.Apply(entry(t, 1, SubmitJob{Job: testJob(1)})).(Result)
	if res.Err != nil || len(res.IDs) != 1 || res.IDs[0] != 1 {
		t.Fatalf("submit: %+v", res)
	}
	// A restarted replica replays entry 1: the store has it already.
	if res = f.Apply(entry(t, 1, SubmitJob{Job: testJob(1)})).(Result); res.Err != nil {
		t.Fatalf("replayed submit: %v", res.Err)
	}
	// A genuine duplicate at a new index is refused.
	if res = f.Apply(entry(t, 2, SubmitJob{Job: testJob(1)})).(Result); res.Err == nil {
		t.Fatalf("duplicate job ID at a new index was accepted")
	}
	res = f.Apply(entry(t, 3, CancelJobs{IDs: []cluster.JobID{1}, Time: time.Unix(2000, 0), Reason: "test"})).(Result)
	if res.Err != nil || len(res.IDs) != 1 || res.IDs[0] != 1 {
		t.Fatalf("cancel: %+v", res)
	}
	j, err := st.Job(1)
	if err != nil || j.State != cluster.JobCancelled {
		t.Fatalf("job after cancel: %+v %v", j, err)
	}
	// Configuration entries are Raft's own: no result, no index.
	if res := f.Apply(&raft.Log{Index: 4, Type: raft.LogConfiguration}); res != nil {
		t.Errorf("configuration entry gave %v", res)
	}
	if st.AppliedIndex() != 3 {
		t.Errorf("applied index %d; want 3", st.AppliedIndex())
	}
}

func TestFSMAppliesBatchesInOrder(t *testing.T) {
	st := openStore(t)
	f := New(st)
	logs := []*raft.Log{
		entry(t, 1, SubmitJob{Job: testJob(1), RequestID: []byte("r")}),
		{Index: 2, Type: raft.LogNoop},
		entry(t, 3, SubmitJob{Job: testJob(2), RequestID: []byte("r")}), // a retry
		entry(t, 4, CancelJobs{IDs: []cluster.JobID{1}, Time: time.Unix(2000, 0)}),
	}
	out := f.ApplyBatch(logs)
	if len(out) != 4 || out[1] != nil {
		t.Fatalf("results %v", out)
	}
	if r := out[2].(Result); r.Err != nil || r.IDs[0] != 1 {
		t.Errorf("retried submit = %+v; want job 1", r)
	}
	if r := out[3].(Result); len(r.IDs) != 1 {
		t.Errorf("cancel in the same batch = %+v", r)
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	if st.DurableIndex() != 4 {
		t.Errorf("durable index %d; want 4", st.DurableIndex())
	}
}

func TestFSMRefusesUnknownCommands(t *testing.T) {
	f := New(openStore(t))
	defer func() {
		if recover() == nil {
			t.Fatal("an unknown command type was applied; it must stop the replica")
		}
	}()
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{250, '{', '}'}})
}

func TestFSMSnapshotRestore(t *testing.T) {
	src := New(openStore(t))
	src.Apply(entry(t, 1, SubmitJob{Job: testJob(7)}))
	src.Apply(entry(t, 2, RegisterNode{Node: &cluster.Node{Name: "n1", GPUs: 8, CPUs: 4}}))
	dst := snapshotCopy(t, src)
	if j, err := dst.store.Job(7); err != nil || j.Name != "j" {
		t.Errorf("restored job: %+v %v", j, err)
	}
	if n, err := dst.store.Node("n1"); err != nil || n.GPUs != 8 {
		t.Errorf("restored node: %+v %v", n, err)
	}
	if dst.store.AppliedIndex() != 2 || dst.store.NextJobID() != 8 {
		t.Errorf("restored applied index %d, next ID %d; want 2 and 8", dst.store.AppliedIndex(), dst.store.NextJobID())
	}
}

// How a placement was made (sacct's Flags) reaches the attempt through the
// log and survives a snapshot.
func TestFSMPlacedBySurvivesSnapshot(t *testing.T) {
	src := New(openStore(t))
	src.Apply(entry(t, 1, RegisterNode{Node: &cluster.Node{Name: "n1", GPUs: 8, CPUs: 4, State: cluster.NodeUp}}))
	src.Apply(entry(t, 2, SubmitJob{Job: testJob(7)}))
	src.Apply(entry(t, 3, SubmitJob{Job: testJob(8)}))
	on := func(gpu int) cluster.Allocation {
		return cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1", GPUs: []int{gpu}}}}
	}
	res := src.Apply(entry(t, 4, PlaceJobs{Placements: []store.Placement{
		{Job: 7, Alloc: on(0), MasterPort: 29500, Time: time.Unix(1100, 0).UTC(), By: cluster.PlacedMain},
		{Job: 8, Alloc: on(1), MasterPort: 29501, Time: time.Unix(1100, 0).UTC(), By: cluster.PlacedBackfill},
	}})).(Result)
	if res.Err != nil || len(res.IDs) != 2 {
		t.Fatalf("place: %+v", res)
	}
	dst := snapshotCopy(t, src)
	for _, f := range []*FSM{src, dst} {
		for id, want := range map[cluster.JobID]cluster.PlacedBy{7: cluster.PlacedMain, 8: cluster.PlacedBackfill} {
			j, err := f.store.Job(id)
			if err != nil || len(j.Attempts) != 1 || j.Attempts[0].PlacedBy != want {
				t.Errorf("job %d: %v, attempts %+v; want one placed by %q", id, err, j.Attempts, want)
			}
		}
	}
}

type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { return nil }

func TestFSMStopsWhenTheStoreCannotApply(t *testing.T) {
	st := openStore(t)
	f := New(st)
	st.Close() // every command now fails locally
	defer func() {
		if recover() == nil {
			t.Fatal("an entry the store could not apply was treated as applied")
		}
	}()
	f.Apply(entry(t, 1, SubmitJob{Job: testJob(1)}))
}

// An entry written by a newer version (a command type this one does not
// know) stops the replica with a message that names the entry and the type
// and says what to do; nothing of it is applied.
func TestFSMStopsOnACommandItDoesNotKnow(t *testing.T) {
	st := openStore(t)
	var stopped error
	f := New(st, OnFatal(func(err error) { stopped = err }))
	future := append([]byte{frameProto}, protowire.AppendTag(nil, 99, protowire.BytesType)...)
	future = protowire.AppendBytes(future, []byte("a command of a later release"))
	if res := f.Apply(&raft.Log{Index: 7, Type: raft.LogCommand, Data: future}); res != nil {
		t.Errorf("applying it gave %v", res)
	}
	want := "raft log entry 7: command type 99: a command this version does not know, written by a newer controller: upgrade this replica and start it again (it replays the log)"
	if stopped == nil || stopped.Error() != want || !errors.Is(stopped, ErrUnknownCommand) {
		t.Errorf("stopped with %v; want %q", stopped, want)
	}
	if st.AppliedIndex() != 0 {
		t.Errorf("applied index %d after an entry it could not read; want 0", st.AppliedIndex())
	}
}

// A feature level this release does not know (raised by a newer leader)
// stops the replica, as a command it does not know does: going on, it
// would apply what follows without what the level turns on.
func TestFSMStopsOnAFeatureLevelItDoesNotKnow(t *testing.T) {
	st := openStore(t)
	var stopped error
	f := New(st, OnFatal(func(err error) { stopped = err }))
	f.Apply(entry(t, 1, SetFeatureLevel{Level: store.FeatureLevel}))
	if stopped != nil || st.FeatureLevel() != store.FeatureLevel {
		t.Fatalf("feature level %d after raising it to this release's %d (stopped: %v)", st.FeatureLevel(), store.FeatureLevel, stopped)
	}
	f.Apply(entry(t, 2, SetFeatureLevel{Level: store.FeatureLevel + 1}))
	if stopped == nil || !strings.Contains(stopped.Error(), "upgrade phalanx-controller") {
		t.Errorf("stopped with %v; want a stop that says to upgrade", stopped)
	}
	if st.AppliedIndex() != 1 || st.FeatureLevel() != store.FeatureLevel {
		t.Errorf("applied index %d, feature level %d after a level it does not know; want 1 and %d", st.AppliedIndex(), st.FeatureLevel(), store.FeatureLevel)
	}
}

// A snapshot Raft holds at a higher index than the state in it (an
// administrator's backup, placed after the log) takes Raft's index; a
// SnapshotIndex that fails fails the restore and leaves the state.
func TestFSMRestoreTakesTheSnapshotsIndex(t *testing.T) {
	src := New(openStore(t))
	src.Apply(entry(t, 1, SubmitJob{Job: testJob(7)}))
	dst := snapshotCopy(t, src, SnapshotIndex(func() (uint64, error) { return 500, nil }))
	if got := dst.store.AppliedIndex(); got != 500 {
		t.Errorf("applied index %d after restoring a snapshot Raft holds at 500; want 500", got)
	}
	failing := New(openStore(t), SnapshotIndex(func() (uint64, error) { return 0, errors.New("no snapshot stored") }))
	failing.Apply(entry(t, 1, RegisterNode{Node: &cluster.Node{Name: "kept", GPUs: 8, CPUs: 4}}))
	if err := failing.Restore(io.NopCloser(bytes.NewReader(persisted(t, src)))); err == nil {
		t.Error("restore went on without the snapshot's index")
	}
	if _, err := failing.store.Node("kept"); err != nil {
		t.Errorf("state after a failed restore: %v", err)
	}
}

// snapshotCopy persists a snapshot of src and restores it into a new FSM.
func snapshotCopy(t *testing.T, src *FSM, opts ...Option) *FSM {
	t.Helper()
	dst := New(openStore(t), opts...)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(persisted(t, src)))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// persisted is a snapshot of src as Raft would store it.
func persisted(t *testing.T, src *FSM) []byte {
	t.Helper()
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}
