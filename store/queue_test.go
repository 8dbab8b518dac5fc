package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// QueueState, what a quick scheduling pass reads, holds every job that
// holds resources or was requeued, the pending jobs named at the head of
// the queue, and those submitted after the last full pass: not the rest.
func TestQueueState(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1")
	for id := cluster.JobID(1); id <= 8; id++ {
		mustSubmit(t, s, uint64(1+id), id)
	}
	if ids, err := s.PlaceJobs(10, []Placement{
		{Job: 2, Alloc: alloc([]int{0, 1}, "n1"), Time: at(1)},
		{Job: 4, Alloc: alloc([]int{2, 3}, "n1"), Time: at(1)},
		{Job: 6, Alloc: alloc([]int{4, 5}, "n1"), Time: at(1)},
	}); err != nil || len(ids) != 3 {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	if _, err := s.PreemptJobs(11, []cluster.JobID{4, 6}, nil, at(2)); err != nil {
		t.Fatal(err)
	}
	// 6 ends and is requeued; 4 is still ending (PREEMPTED).
	if err := s.ReportTask(12, cluster.TaskReport{JobID: 6, Rank: 0, Node: "n1", State: cluster.TaskKilled, ExitSignal: 15, Time: at(3)}); err != nil {
		t.Fatal(err)
	}
	if got := queueIDs(t, s, nil, 0); got != "1 2 3 4 5 6 7 8" {
		t.Errorf("before any full pass: %s; want every active job", got)
	}
	// The last full pass saw jobs up to 8 and ranked 7 and 3 first.
	mustSubmit(t, s, 13, 9)
	mustSubmit(t, s, 14, 10)
	if got := queueIDs(t, s, []cluster.JobID{7, 3, 99}, 8); got != "2 3 4 6 7 9 10" {
		t.Errorf("QueueState: %s; want running 2, preempting 4, requeued 6, head 3 7, new 9 10", got)
	}
	if _, err := s.CancelJobs(15, []cluster.JobID{2, 7}, at(4), "c", nil); err != nil {
		t.Fatal(err)
	}
	// 7 is gone; 2 is CANCELLED but holds its GPUs until its task ends.
	if got := queueIDs(t, s, []cluster.JobID{7, 3}, 8); got != "2 3 4 6 9 10" {
		t.Errorf("after cancelling 2 and 7: %s; want 2 3 4 6 9 10", got)
	}
	if err := s.ReportTask(16, cluster.TaskReport{JobID: 2, Rank: 0, Node: "n1", State: cluster.TaskKilled, ExitSignal: 15, Time: at(5)}); err != nil {
		t.Fatal(err)
	}
	if got := queueIDs(t, s, []cluster.JobID{7, 3}, 8); got != "3 4 6 9 10" {
		t.Errorf("after job 2's task ended: %s; want 3 4 6 9 10", got)
	}
	if err := checkConsistency(s); err != nil {
		t.Fatal(err)
	}
}

func queueIDs(t *testing.T, s *Store, head []cluster.JobID, after cluster.JobID) string {
	t.Helper()
	st, err := s.QueueState(head, after)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, j := range st.Active {
		out = append(out, fmt.Sprint(j.ID))
	}
	return strings.Join(out, " ")
}

// A quick pass also sees the pending jobs that preempted jobs name, while
// the victims leave and once they are requeued, so that it keeps what they
// free for them; a preemptor that has started is not pending and is not
// added.
func TestQueueStateHoldsPreemptors(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1")
	for id := cluster.JobID(1); id <= 5; id++ {
		mustSubmit(t, s, uint64(1+id), id)
	}
	if ids, err := s.PlaceJobs(10, []Placement{
		{Job: 1, Alloc: alloc([]int{0, 1}, "n1"), Time: at(1)},
		{Job: 2, Alloc: alloc([]int{2, 3}, "n1"), Time: at(1)},
	}); err != nil || len(ids) != 2 {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	if _, err := s.PreemptJobs(11, []cluster.JobID{1, 2}, []cluster.JobID{4, 5}, at(2)); err != nil {
		t.Fatal(err)
	}
	if got := queueIDs(t, s, []cluster.JobID{3}, 5); got != "1 2 3 4 5" {
		t.Errorf("victims leaving: %s; want victims 1 2, head 3, preemptors 4 5", got)
	}
	if err := s.ReportTask(12, cluster.TaskReport{JobID: 1, Rank: 0, Node: "n1", State: cluster.TaskKilled, ExitSignal: 15, Time: at(3)}); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.PlaceJobs(13, []Placement{{Job: 5, Alloc: alloc([]int{4, 5}, "n1"), Time: at(3)}}); err != nil || len(ids) != 1 {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	if got := queueIDs(t, s, []cluster.JobID{3}, 5); got != "1 2 3 4 5" {
		t.Errorf("victim 1 requeued, preemptor 5 started: %s; want 1 (requeued) 2 3 4 5 (running)", got)
	}
	if got := queueIDs(t, s, nil, 5); got != "1 2 4 5" {
		t.Errorf("empty head: %s; want 1 2 4 (preemptor of 1) 5", got)
	}
}
