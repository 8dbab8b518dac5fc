package cli

import (
	"slices"
	"testing"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// sbatch --wait waits for jobs that will not run again: not for a job
// preempted or requeued (it goes back to the queue), nor for one that
// failed while others of its tasks still stop (--restart-on may restart
// it once they have).
func TestWaitForJobsEndedForGood(t *testing.T) {
	task := func(st string) *phalanxv1.Task { return &phalanxv1.Task{State: st} }
	jobs := []*phalanxv1.Job{
		{Id: 1, State: "FAILED", ExitCode: 1, Tasks: []*phalanxv1.Task{task("EXITED"), task("RUNNING")}},
		{Id: 2, State: "PREEMPTED", Tasks: []*phalanxv1.Task{task("KILLED")}},
		{Id: 3, State: "REQUEUED"},
		{Id: 4, State: "RUNNING", Tasks: []*phalanxv1.Task{task("RUNNING")}},
		{Id: 5, State: "FAILED", ExitCode: 2, Tasks: []*phalanxv1.Task{task("EXITED"), task("KILLED")}},
		{Id: 6, State: "COMPLETED", Tasks: []*phalanxv1.Task{task("EXITED")}},
	}
	var w jobWait
	if open := w.add(jobs); !slices.Equal(open, []uint64{1, 2, 3, 4}) {
		t.Errorf("still waited for: %v; want 1 2 3 4", open)
	}
	if w.worst.GetId() != 5 || w.code != 2 {
		t.Errorf("worst so far: job %d, code %d; want job 5, 2", w.worst.GetId(), w.code)
	}
}
