package store

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// TestPreemptJobs: a preempted job holds its GPUs until its tasks end, then
// is pending again for its next attempt, and its GPUs can be placed anew.
func TestPreemptJobs(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1")
	mustSubmit(t, s, 2, 1)
	mustSubmit(t, s, 3, 2)
	if ids, err := s.PlaceJobs(4, []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1"), Time: at(1)}}); err != nil || len(ids) != 1 {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	ids, err := s.PreemptJobs(5, []cluster.JobID{1, 2, 99}, nil, at(5))
	if err != nil || !reflect.DeepEqual(ids, []cluster.JobID{1}) {
		t.Fatalf("PreemptJobs = %v, %v; want [1] (2 is pending, 99 unknown)", ids, err)
	}
	if j := mustJob(t, s, 1); j.State != cluster.JobPreempted || !j.Live() {
		t.Fatalf("job 1 = %s live=%v; want PREEMPTED and still holding its GPUs", j.State, j.Live())
	}
	// Its GPUs are still held: job 2 cannot take them yet.
	if ids, _ := s.PlaceJobs(6, []Placement{{Job: 2, Alloc: alloc([]int{0, 1}, "n1"), Time: at(6)}}); len(ids) != 0 {
		t.Fatal("placed job 2 on the GPUs of a job still being preempted")
	}
	err = s.ReportTask(7, cluster.TaskReport{JobID: 1, Rank: 0, Node: "n1", State: cluster.TaskKilled, ExitSignal: 15, Time: at(7)})
	if err != nil {
		t.Fatal(err)
	}
	j := mustJob(t, s, 1)
	if j.State != cluster.JobPending || j.Attempt != 1 || !j.Requeued || j.Alloc != nil {
		t.Fatalf("job 1 after its task ended = %s attempt %d requeued %v alloc %v; want PENDING, attempt 1, requeued, no alloc",
			j.State, j.Attempt, j.Requeued, j.Alloc)
	}
	if ids, _ := s.PlaceJobs(8, []Placement{{Job: 2, Alloc: alloc([]int{0, 1}, "n1"), Time: at(8)}}); len(ids) != 1 {
		t.Fatal("job 2 could not take the GPUs the preempted job released")
	}
	if err := checkConsistency(s); err != nil {
		t.Fatal(err)
	}
	if active := s.ActiveJobs(); len(active) != 2 {
		t.Fatalf("ActiveJobs = %d jobs; want both (1 pending again, 2 placed)", len(active))
	}
}

// TestPreemptJobsRecordsThePreemptor: the preempted attempt names the job
// it made room for and that job's pending attempt, on disk too, and still
// does once the victim is back in the queue. A victim with no preemptor
// named (an entry without one) records none.
func TestPreemptJobsRecordsThePreemptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTest(t, path)
	mustRegister(t, s, 1, "n1")
	mustSubmit(t, s, 2, 1)
	mustSubmit(t, s, 3, 2)
	mustSubmit(t, s, 4, 3)
	if ids, err := s.PlaceJobs(5, []Placement{
		{Job: 1, Alloc: alloc([]int{0, 1}, "n1"), Time: at(1)},
		{Job: 3, Alloc: alloc([]int{2, 3}, "n1"), Time: at(1)},
	}); err != nil || len(ids) != 2 {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	if _, err := s.PreemptJobs(6, []cluster.JobID{1, 3}, []cluster.JobID{2}, at(5)); err != nil {
		t.Fatal(err)
	}
	if err := s.ReportTask(7, cluster.TaskReport{JobID: 1, Rank: 0, Node: "n1", State: cluster.TaskKilled, ExitSignal: 15, Time: at(7)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path)
	j := mustJob(t, s, 1)
	if want := (cluster.JobAttempt{Job: 2, Attempt: 0}); j.State != cluster.JobPending || j.Attempts[0].PreemptedFor != want {
		t.Errorf("job 1 after a reopen: %s, attempt 0 preempted for %+v; want PENDING, for %+v", j.State, j.Attempts[0].PreemptedFor, want)
	}
	if got := mustJob(t, s, 3).Attempts[0].PreemptedFor; got != (cluster.JobAttempt{}) {
		t.Errorf("job 3 preempted for %+v; want none named", got)
	}
}
