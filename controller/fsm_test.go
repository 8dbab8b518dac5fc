package controller

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func logEntry(t *testing.T, idx uint64, ct commandType, payload any) *raft.Log {
	t.Helper()
	data, err := encodeCommand(ct, payload)
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
	fired := 0
	f := &fsm{store: st, applied: func() { fired++ }}

	res := f.Apply(logEntry(t, 1, cmdSubmitJob, submitJobCmd{Job: testJob(1)})).(applyResult)
	if res.Err != nil {
		t.Fatalf("submit: %v", res.Err)
	}
	// A restarted replica replays entry 1: the store has it already.
	res = f.Apply(logEntry(t, 1, cmdSubmitJob, submitJobCmd{Job: testJob(1)})).(applyResult)
	if res.Err != nil {
		t.Fatalf("replayed submit: %v", res.Err)
	}
	// A genuine duplicate at a new index is refused.
	res = f.Apply(logEntry(t, 2, cmdSubmitJob, submitJobCmd{Job: testJob(1)})).(applyResult)
	if res.Err == nil {
		t.Fatalf("duplicate job ID at a new index was accepted")
	}
	res = f.Apply(logEntry(t, 3, cmdCancelJobs, cancelJobsCmd{IDs: []cluster.JobID{1}, Time: time.Unix(2000, 0), Reason: "test"})).(applyResult)
	if res.Err != nil || len(res.IDs) != 1 || res.IDs[0] != 1 {
		t.Fatalf("cancel: %+v", res)
	}
	j, err := st.Job(1)
	if err != nil || j.State != cluster.JobCancelled {
		t.Fatalf("job after cancel: %+v %v", j, err)
	}
	if st.AppliedIndex() != 3 || fired != 4 {
		t.Errorf("applied index %d, watchers woken %d times; want 3 and 4", st.AppliedIndex(), fired)
	}
}

func TestFSMRefusesUnknownCommands(t *testing.T) {
	f := &fsm{store: openStore(t)}
	defer func() {
		if recover() == nil {
			t.Fatal("an unknown command type was applied; it must stop the replica")
		}
	}()
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{250, '{', '}'}})
}

func TestFSMSnapshotRestore(t *testing.T) {
	src := &fsm{store: openStore(t)}
	src.Apply(logEntry(t, 1, cmdSubmitJob, submitJobCmd{Job: testJob(7)}))
	src.Apply(logEntry(t, 2, cmdRegisterNode, registerNodeCmd{Node: &cluster.Node{Name: "n1", GPUs: 8, CPUs: 4}}))
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	dst := &fsm{store: openStore(t)}
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
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

type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { return nil }

func TestPortPickerSkipsPortsInUseOnTheMasterNode(t *testing.T) {
	live := testJob(1)
	live.Alloc = &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "a"}}}
	live.Tasks = []cluster.Task{{Node: "a", State: cluster.TaskRunning}}
	live.MasterPort = 29500
	p := newPortPicker(29500, 29501, []*cluster.Job{live})
	if port, ok := p.pick("a"); !ok || port != 29501 {
		t.Errorf("pick on a = %d %v; want 29501", port, ok)
	}
	if _, ok := p.pick("a"); ok {
		t.Errorf("range exhausted on a, yet a port was handed out")
	}
	if port, ok := p.pick("b"); !ok || port != 29500 {
		t.Errorf("pick on b = %d %v; want 29500", port, ok)
	}
}

func TestFSMStopsWhenTheStoreCannotApply(t *testing.T) {
	st := openStore(t)
	f := &fsm{store: st}
	st.Close() // every write now fails locally
	defer func() {
		if recover() == nil {
			t.Fatal("an entry the store could not apply was treated as applied")
		}
	}()
	f.Apply(logEntry(t, 1, cmdSubmitJob, submitJobCmd{Job: testJob(1)}))
}
