package store

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// openTest opens a store at path (a new temp dir when empty) and, when the
// test ends, checks its invariants and closes it.
func openTest(t *testing.T, path string) *Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "state.db")
	}
	s, err := Open(path, NoSync())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := checkConsistency(s); err != nil {
			t.Errorf("consistency check: %v", err)
		}
		s.Close()
	})
	return s
}

// checkConsistency verifies the store's invariants; a closed store passes.
// Memory must be well formed (checkMemory), and the database, once the
// writer has caught up, must load into the same state.
func checkConsistency(s *Store) error {
	if err := s.Flush(); err == ErrClosed {
		return nil
	} else if err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := checkMemory(s.st); err != nil {
		return err
	}
	s.pmu.Lock()
	unflushed := len(s.unflushed)
	s.pmu.Unlock()
	if unflushed > 0 {
		return fmt.Errorf("%d payloads still only in memory after a flush", unflushed)
	}
	var disk *state
	err := s.withDB(func(db *bolt.DB) error {
		if err := db.View(func(tx *bolt.Tx) error {
			if v := version(tx); v != SchemaVersion {
				return fmt.Errorf("schema version %d", v)
			}
			return nil
		}); err != nil {
			return err
		}
		var err error
		disk, err = load(db, s.opts.halfLife)
		return err
	})
	if err != nil {
		return err
	}
	return sameState(s.st, disk)
}

// checkMemory checks the in-memory indexes against each other: the active
// list is the active map in ID order and holds only active jobs, no ID is
// both active and finished, the next ID is above every job, the live-job
// index is exact, nodes are listed by name, events are in order below the
// next number, and no GPU is held twice.
func checkMemory(st *state) error {
	if len(st.active) != len(st.jobs) {
		return fmt.Errorf("active list has %d jobs, map %d", len(st.active), len(st.jobs))
	}
	for i, j := range st.active {
		switch {
		case st.jobs[j.ID] != j:
			return fmt.Errorf("active list entry %d (job %d) is not the map's", i, j.ID)
		case i > 0 && st.active[i-1].ID >= j.ID:
			return fmt.Errorf("active list out of order at %d", i)
		case !isActive(j):
			return fmt.Errorf("job %d (%s, live %v) is in the active set", j.ID, j.State, j.Live())
		case j.ID >= st.nextJob:
			return fmt.Errorf("job %d is not below the next ID %d", j.ID, st.nextJob)
		case j.Script != "" || j.Env != nil:
			return fmt.Errorf("job %d keeps its script or environment in memory; they belong in payloads", j.ID)
		}
		if _, ok := st.finished[j.ID]; ok {
			return fmt.Errorf("job %d is both active and finished", j.ID)
		}
	}
	for id := range st.finished {
		if id >= st.nextJob {
			return fmt.Errorf("finished job %d is not below the next ID %d", id, st.nextJob)
		}
	}
	want := newState(st.halfLife)
	for _, j := range st.active {
		want.indexLive(j)
	}
	if fmt.Sprint(want.liveOnNode) != fmt.Sprint(st.liveOnNode) {
		return fmt.Errorf("live-job index %v; want %v", st.liveOnNode, want.liveOnNode)
	}
	if len(want.unqueued) != len(st.unqueued) {
		return fmt.Errorf("%d unqueued jobs indexed; want %d", len(st.unqueued), len(want.unqueued))
	}
	for id, j := range want.unqueued {
		if st.unqueued[id] != j {
			return fmt.Errorf("unqueued index has %v for job %d; want the active job", st.unqueued[id], id)
		}
	}
	if len(st.nodeList) != len(st.nodes) || !slices.IsSortedFunc(st.nodeList, func(a, b *cluster.Node) int { return compareStrings(a.Name, b.Name) }) {
		return fmt.Errorf("node list is not the node map by name")
	}
	for _, n := range st.nodeList {
		if st.nodes[n.Name] != n {
			return fmt.Errorf("node list entry %s is not the map's", n.Name)
		}
	}
	for i, e := range st.events {
		if e.seq >= st.nextEvent || i > 0 && st.events[i-1].seq >= e.seq {
			return fmt.Errorf("event %d (entry %d) is out of order, or not below the next number %d", e.seq, i, st.nextEvent)
		}
	}
	return checkNoDoubleBooking(st.active)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sameState compares memory with what the database loads into, record by
// record in their persisted form.
func sameState(mem, disk *state) error {
	switch {
	case mem.applied != disk.applied:
		return fmt.Errorf("applied index: memory %d, disk %d", mem.applied, disk.applied)
	case mem.nextJob != disk.nextJob:
		return fmt.Errorf("next job: memory %d, disk %d", mem.nextJob, disk.nextJob)
	case len(mem.jobs) != len(disk.jobs):
		return fmt.Errorf("active jobs: memory %d, disk %d", len(mem.jobs), len(disk.jobs))
	case fmt.Sprint(mem.finished) != fmt.Sprint(disk.finished):
		return fmt.Errorf("finished jobs: memory %v, disk %v", mem.finished, disk.finished)
	case fmt.Sprint(mem.requests) != fmt.Sprint(disk.requests):
		return fmt.Errorf("requests: memory %v, disk %v", mem.requests, disk.requests)
	case fmt.Sprint(mem.ctls) != fmt.Sprint(disk.ctls):
		return fmt.Errorf("controllers: memory %v, disk %v", mem.ctls, disk.ctls)
	case len(mem.nodes) != len(disk.nodes) || len(mem.parts) != len(disk.parts):
		return fmt.Errorf("nodes or partitions differ in number")
	case mem.nextEvent != disk.nextEvent:
		return fmt.Errorf("next event: memory %d, disk %d", mem.nextEvent, disk.nextEvent)
	case fmt.Sprint(mem.events) != fmt.Sprint(disk.events):
		return fmt.Errorf("events: memory %v, disk %v", mem.events, disk.events)
	case fmt.Sprint(mem.held) != fmt.Sprint(disk.held):
		return fmt.Errorf("fair share's records: memory %v, disk %v", mem.held, disk.held)
	}
	for g, u := range mem.usage { // summed in another order: equal but for rounding
		d := disk.usage[g]
		t := max(u.at, d.at)
		if a, b := mem.decayed(u, t).v, disk.decayed(d, t).v; math.Abs(a-b) > 1e-9*max(a, b)+1e-6 {
			return fmt.Errorf("fair share's usage of %s: memory %g, disk %g", g, a, b)
		}
	}
	for id, j := range mem.jobs {
		if err := sameRecord(fmt.Sprintf("job %d", id), j, disk.jobs[id], jobRecord); err != nil {
			return err
		}
	}
	for name, n := range mem.nodes {
		if err := sameRecord("node "+name, n, disk.nodes[name], nodeRecord); err != nil {
			return err
		}
	}
	for i, p := range mem.parts {
		if err := sameRecord(fmt.Sprintf("partition %d", i), p, disk.parts[i], partRecord); err != nil {
			return err
		}
	}
	return nil
}

func jobRecord(j *cluster.Job) ([]proto.Message, error) {
	r, err := codec.Job(j)
	return []proto.Message{r}, err
}

func nodeRecord(n *cluster.Node) ([]proto.Message, error) {
	r, err := codec.Node(n)
	return []proto.Message{r}, err
}

func partRecord(p *cluster.Partition) ([]proto.Message, error) {
	r, err := codec.Partition(p)
	return []proto.Message{r}, err
}

func sameRecord[T any](what string, mem, disk T, enc func(T) ([]proto.Message, error)) error {
	a, err := enc(mem)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	b, err := enc(disk)
	if err != nil {
		return fmt.Errorf("%s on disk: %w", what, err)
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return fmt.Errorf("%s: memory %v, disk %v", what, a[i], b[i])
		}
	}
	return nil
}

func checkNoDoubleBooking(jobs []*cluster.Job) error {
	for node, u := range cluster.Usage(jobs) {
		for i := 1; i < len(u.GPUs); i++ {
			if u.GPUs[i] == u.GPUs[i-1] {
				return fmt.Errorf("node %s: GPU %d held by two live jobs", node, u.GPUs[i])
			}
		}
	}
	return nil
}

func TestConsistencyCheckCatchesADiskThatDisagrees(t *testing.T) {
	s := openTest(t, "")
	mustSubmit(t, s, 1, 1)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	err := s.withDB(func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketJobs).Delete(jobKey(1)) })
	})
	if err != nil {
		t.Fatal(err)
	}
	if checkConsistency(s) == nil {
		t.Fatalf("a pending job missing on disk passed the check")
	}
	mustSubmit(t, s, 2, 2) // leave the store consistent for the cleanup check
	s.mu.Lock()
	j := s.st.jobs[1]
	s.mu.Unlock()
	if err := s.withDB(func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error { return putJobOp{j: j}.write(tx) })
	}); err != nil {
		t.Fatal(err)
	}
}

// Fixtures.

func gpuNode(name string) *cluster.Node {
	return &cluster.Node{Name: name, Addr: name + ":7818", CPUs: 64, MemoryMB: 512000, GPUs: 8, GPUModel: "a100", Registered: t0}
}

func pendingJob(id cluster.JobID, nodes, gpus int) *cluster.Job {
	return &cluster.Job{
		ID: id, Name: fmt.Sprintf("job%d", id), User: "alice", Partition: "gpu",
		Nodes: nodes, GPUsPerNode: gpus, CPUsPerNode: 8, MemoryMB: 1000,
		SubmitTime: t0, State: cluster.JobPending, Reason: string(cluster.ReasonNone),
		Script: "#!/bin/sh\ntrue\n", Env: map[string]string{"A": "1"},
		Restart: cluster.RestartPolicy{MaxRestarts: cluster.DefaultMaxRestarts, On: cluster.DefaultRestartOn}, // sbatch's default
	}
}

func mustSubmit(t *testing.T, s *Store, idx uint64, id cluster.JobID) {
	t.Helper()
	if _, err := s.SubmitJob(idx, pendingJob(id, 1, 2), nil, nil); err != nil {
		t.Fatalf("SubmitJob(%d): %v", id, err)
	}
}

func mustRegister(t *testing.T, s *Store, idx uint64, names ...string) {
	t.Helper()
	for i, n := range names {
		if err := s.RegisterNode(idx+uint64(i), gpuNode(n)); err != nil {
			t.Fatalf("RegisterNode(%s): %v", n, err)
		}
	}
}

// alloc gives every named node the GPUs listed, 8 CPUs and 1000 MB.
func alloc(gpus []int, nodes ...string) cluster.Allocation {
	var a cluster.Allocation
	for _, n := range nodes {
		a.Nodes = append(a.Nodes, cluster.NodeAlloc{Node: n, GPUs: gpus, CPUs: 8, MemoryMB: 1000})
	}
	return a
}

func mustJob(t *testing.T, s *Store, id cluster.JobID) *cluster.Job {
	t.Helper()
	j, err := s.Job(id)
	if err != nil {
		t.Fatalf("Job(%d): %v", id, err)
	}
	return j
}

// submitErr submits j without a request ID and returns only the error.
func submitErr(s *Store, idx uint64, j *cluster.Job) error {
	_, err := s.SubmitJob(idx, j, nil, nil)
	return err
}
