package store

import (
	"path/filepath"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// A job array is one command: a job per index, consecutive IDs, each with
// its array record, sharing one payload, which stays until the array's
// last task is forgotten (in any order), and across a reopen.
func TestSubmitArraySharesOnePayload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTest(t, path)
	j := pendingJob(10, 1, 1)
	j.Script = "#!/bin/sh\necho $SLURM_ARRAY_TASK_ID\n"
	id, err := s.SubmitArray(1, j, nil, []byte("r1"), cluster.ArraySpec{Tasks: []int{0, 4, 8}, Throttle: 2})
	if err != nil || id != 10 {
		t.Fatalf("SubmitArray = %d, %v", id, err)
	}
	for i, task := range []int{0, 4, 8} {
		got, err := s.Job(cluster.JobID(10 + i))
		if err != nil {
			t.Fatal(err)
		}
		want := cluster.ArrayTask{JobID: 10, TaskID: task, Count: 3, Min: 0, Max: 8, Step: 4, Throttle: 2}
		if got.Array == nil || *got.Array != want || got.Script != j.Script {
			t.Errorf("task %d: array %+v script %q", i, got.Array, got.Script)
		}
	}
	if s.NextJobID() != 13 {
		t.Errorf("next job ID %d, want 13", s.NextJobID())
	}
	if _, err := s.SubmitArray(2, pendingJob(12, 1, 1), nil, nil, cluster.ArraySpec{}); err == nil {
		t.Error("a job took an ID of the array")
	}
	if got, err := s.SubmitArray(3, j, nil, []byte("r1"), cluster.ArraySpec{Tasks: []int{0, 4, 8}}); err != nil || got != 10 {
		t.Errorf("a retried array submit: %d, %v; want the array's ID 10 and nothing new", got, err)
	}
	// End them at different times, then forget the first task (the
	// payload's key) first: the others still read the script.
	for i, id := range []cluster.JobID{10, 12, 11} {
		if _, err := s.CancelJobs(uint64(4+i), []cluster.JobID{id}, at(10+i), "c", nil); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = openTest(t, path)
	for i, r := range []Retention{{MaxHistory: 2}, {MaxHistory: 1}} {
		if err := s.Expire(uint64(10+i), r); err != nil {
			t.Fatal(err)
		}
		for _, left := range [][]cluster.JobID{{11, 12}, {11}}[i] {
			got, err := s.Job(left)
			if err != nil || got.Script != j.Script {
				t.Errorf("after expiry %d: task %d reads its script: %v", i, left, err)
			}
		}
	}
	if err := s.Expire(12, Retention{HistoryBefore: at(1000)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if p, err := s.payload(10); err != nil || p != nil {
		t.Errorf("the array's payload outlived its last task: %d bytes, %v", len(p), err)
	}
}
