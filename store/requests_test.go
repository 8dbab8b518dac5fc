package store

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// A retried submit (same request ID, new job ID chosen by a new leader)
// creates nothing and answers with the first job.
func TestSubmitIsExactlyOncePerRequest(t *testing.T) {
	s := openTest(t, "")
	req := []byte("request-1")
	id, err := s.SubmitJob(1, pendingJob(5, 1, 1), nil, req)
	if err != nil || id != 5 {
		t.Fatalf("first submit = %d, %v", id, err)
	}
	id, err = s.SubmitJob(2, pendingJob(6, 1, 1), nil, req)
	if err != nil || id != 5 {
		t.Fatalf("retried submit = %d, %v; want job 5 again", id, err)
	}
	if _, err := s.Job(6); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("the retry created job 6: %v", err)
	}
	if got, ok := s.RequestJob(req); !ok || got != 5 {
		t.Errorf("RequestJob = %d %v", got, ok)
	}
	// Without a request ID every submit is a new job.
	if id, err := s.SubmitJob(3, pendingJob(7, 1, 1), nil, nil); err != nil || id != 7 {
		t.Errorf("submit without request ID = %d, %v", id, err)
	}
	// The table survives a restart.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, s.path)
	if id, err := s.SubmitJob(4, pendingJob(8, 1, 1), nil, req); err != nil || id != 5 {
		t.Errorf("retry after restart = %d, %v; want 5", id, err)
	}
}

// A retried cancel (same request ID) answers every job the request
// cancelled, though they have ended since; a batch with the same ID adds
// to it; a refused cancel remembers nothing; the record survives a
// restart and expires like a submit's.
func TestCancelIsExactlyOncePerRequest(t *testing.T) {
	s := openTest(t, "")
	for id := cluster.JobID(1); id <= 3; id++ {
		mustSubmit(t, s, uint64(id), id)
	}
	req := []byte("cancel-1")
	cancel := func(idx uint64, ids ...cluster.JobID) []cluster.JobID {
		t.Helper()
		got, err := s.CancelJobs(idx, ids, at(10), "c", req)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := cancel(4, 1); !reflect.DeepEqual(got, []cluster.JobID{1}) {
		t.Fatalf("first cancel = %v; want [1]", got)
	}
	if got := cancel(5, 1); !reflect.DeepEqual(got, []cluster.JobID{1}) {
		t.Fatalf("retried cancel = %v; want [1] again", got)
	}
	if got := cancel(6, 2); !reflect.DeepEqual(got, []cluster.JobID{1, 2}) {
		t.Fatalf("second batch of the request = %v; want [1 2]", got)
	}
	// Without the ID, a cancel of an ended job changes nothing and says so.
	if got, err := s.CancelJobs(7, []cluster.JobID{1}, at(11), "c", nil); err != nil || len(got) != 0 {
		t.Errorf("cancel of an ended job without request ID = %v, %v; want nothing", got, err)
	}
	if _, err := s.CancelJobs(8, []cluster.JobID{99}, at(11), "c", []byte("cancel-2")); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("cancel of an unknown job: %v; want ErrNotFound", err)
	}
	if _, ok := s.RequestCancelled([]byte("cancel-2")); ok {
		t.Error("a refused cancel left a request record")
	}
	// The same client ID used for a submit keeps the two apart.
	if id, err := s.SubmitJob(9, pendingJob(4, 1, 1), nil, req); err != nil || id != 4 {
		t.Errorf("submit with a cancel's request ID = %d, %v; want job 4 created", id, err)
	}
	if got := cancel(10, 3); !reflect.DeepEqual(got, []cluster.JobID{1, 2, 3}) {
		t.Errorf("cancel after a submit with its ID = %v; want [1 2 3]", got)
	}
	if id, ok := s.RequestJob(req); !ok || id != 4 {
		t.Errorf("the submit's record = %d %v; want job 4", id, ok)
	}
	if err := checkConsistency(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, s.path)
	if got, ok := s.RequestCancelled(req); !ok || !reflect.DeepEqual(got, []cluster.JobID{1, 2, 3}) {
		t.Errorf("after a restart the request cancelled %v (%v); want [1 2 3]", got, ok)
	}
	if err := s.Expire(11, Retention{RequestsBefore: at(11)}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.RequestCancelled(req); ok {
		t.Error("the cancel request outlived its retention")
	}
}

func TestExpireForgetsOldRequestsAndHistory(t *testing.T) {
	s := openTest(t, "")
	idx := uint64(0)
	for i := 1; i <= 6; i++ {
		idx++
		j := pendingJob(cluster.JobID(i), 1, 1)
		j.SubmitTime = at(i)
		if _, err := s.SubmitJob(idx, j, nil, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 4; i++ { // jobs 1-4 end at 100+i
		idx++
		if _, err := s.CancelJobs(idx, []cluster.JobID{cluster.JobID(i)}, at(100+i), "c", nil); err != nil {
			t.Fatal(err)
		}
	}
	idx++
	err := s.Expire(idx, Retention{RequestsBefore: at(3), HistoryBefore: at(102), MaxHistory: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, false, true, true, true, true} {
		if _, ok := s.RequestJob([]byte{byte(i + 1)}); ok != want {
			t.Errorf("request %d remembered = %v; want %v (requests before second 3 expire)", i+1, ok, want)
		}
	}
	// Job 1 ended before the cut-off; of 2, 3 and 4 the cap of 2 keeps 3 and 4.
	for id, want := range map[cluster.JobID]bool{1: false, 2: false, 3: true, 4: true, 5: true, 6: true} {
		if _, err := s.Job(id); (err == nil) != want {
			t.Errorf("job %d found = %v; want %v", id, err == nil, want)
		}
	}
	_, finished, requests := s.Counts()
	if finished != 2 || requests != 4 {
		t.Errorf("%d finished jobs and %d requests remembered; want 2 and 4", finished, requests)
	}
	// A count cap alone forgets the oldest requests (by time, then job).
	idx++
	if err := s.Expire(idx, Retention{MaxRequests: 1}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.RequestJob([]byte{6}); !ok {
		t.Errorf("the newest request was forgotten")
	}
	if _, _, requests := s.Counts(); requests != 1 {
		t.Errorf("%d requests remembered; want 1", requests)
	}
}

func TestAttemptRecordsCarryTheirRaftIndexes(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1")
	mustSubmit(t, s, 2, 1)
	if ids, _ := s.PlaceJobs(3, []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1"), Time: at(1)}}); len(ids) != 1 {
		t.Fatal("not placed")
	}
	if _, err := s.PreemptJobs(4, []cluster.JobID{1}, nil, at(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.ReportTask(5, cluster.TaskReport{JobID: 1, Node: "n1", State: cluster.TaskKilled, Time: at(3)}); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.PlaceJobs(6, []Placement{{Job: 1, Alloc: alloc([]int{4, 5}, "n1"), Time: at(4)}}); len(ids) != 1 {
		t.Fatal("requeued job not placed again")
	}
	j := mustJob(t, s, 1)
	if len(j.Attempts) != 2 {
		t.Fatalf("attempts = %+v; want two", j.Attempts)
	}
	first, second := j.Attempts[0], j.Attempts[1]
	if first.Attempt != 0 || first.PlacedIndex != 3 || first.ReleasedIndex != 5 || first.State != cluster.JobPreempted || !first.EndTime.Equal(at(3)) {
		t.Errorf("first attempt = %+v; want attempt 0 placed at 3, released at 5, PREEMPTED at second 3", first)
	}
	if second.Attempt != 1 || second.PlacedIndex != 6 || second.ReleasedIndex != 0 || second.Released() {
		t.Errorf("second attempt = %+v; want attempt 1 placed at 6, holding its GPUs", second)
	}
}

func TestNodeJobsWakesWatchersOfChangedNodesOnly(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1", "n2")
	mustSubmit(t, s, 3, 1)
	jobs, n1 := s.NodeJobs("n1")
	_, n2 := s.NodeJobs("n2")
	if len(jobs) != 0 {
		t.Fatalf("jobs on n1 before placement: %v", jobs)
	}
	if _, err := s.PlaceJobs(4, []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1"), Time: at(1)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-n1:
	case <-time.After(time.Second):
		t.Fatal("placing a job on n1 did not wake n1's watcher")
	}
	select {
	case <-n2:
		t.Fatal("placing a job on n1 woke n2's watcher")
	default:
	}
	jobs, _ = s.NodeJobs("n1")
	if len(jobs) != 1 || jobs[0].ID != 1 {
		t.Errorf("jobs on n1 = %v; want job 1", jobs)
	}
}
