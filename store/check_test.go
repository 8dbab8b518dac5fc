package store

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
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
	s, err := Open(path)
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
// The active bucket holds exactly the jobs that are not terminal or are
// live, the next job ID is above every job, and no GPU is held twice.
func checkConsistency(s *Store) error {
	err := s.view(func(tx *bolt.Tx) error {
		if v := version(tx); v != schemaVersion {
			return fmt.Errorf("schema version %d", v)
		}
		next := getUint64(tx.Bucket(bucketMeta), keyNextJob)
		active := tx.Bucket(bucketActive)
		var jobs []*cluster.Job
		err := tx.Bucket(bucketJobs).ForEach(func(k, _ []byte) error {
			id := cluster.JobID(binary.BigEndian.Uint64(k))
			j, err := getJob(tx, id)
			if err != nil {
				return err
			}
			if j.ID != id {
				return fmt.Errorf("job under key %d has ID %d", id, j.ID)
			}
			if uint64(id) >= next {
				return fmt.Errorf("job %d is not below the next ID %d", id, next)
			}
			if in := active.Get(k) != nil; in != isActive(j) {
				return fmt.Errorf("job %d (%s, live %v): in active bucket = %v", id, j.State, j.Live(), in)
			}
			jobs = append(jobs, j)
			return nil
		})
		if err != nil {
			return err
		}
		if n := active.Stats().KeyN; n > len(jobs) {
			return fmt.Errorf("active bucket has %d keys for %d jobs", n, len(jobs))
		}
		if _, err := activeJobs(tx); err != nil {
			return err
		}
		return checkNoDoubleBooking(jobs)
	})
	if err == ErrClosed {
		return nil
	}
	return err
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

func TestConsistencyCheckCatchesAStaleActiveIndex(t *testing.T) {
	s := openTest(t, "")
	mustSubmit(t, s, 1, 1)
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketActive).Delete(jobKey(1)) })
	if err != nil {
		t.Fatal(err)
	}
	if checkConsistency(s) == nil {
		t.Fatalf("a pending job missing from the active bucket passed the check")
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketActive).Put(jobKey(1), nil) }); err != nil {
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
		SubmitTime: t0, State: cluster.JobPending, Reason: cluster.ReasonNone,
		Env: map[string]string{"A": "1"},
	}
}

func mustSubmit(t *testing.T, s *Store, idx uint64, id cluster.JobID) {
	t.Helper()
	if err := s.SubmitJob(idx, pendingJob(id, 1, 2)); err != nil {
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
