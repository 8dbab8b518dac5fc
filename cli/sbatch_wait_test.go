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

// A job that failed without an exit status, its launch failed (its working
// directory is not there), is a failure to sbatch --wait: status 1, not 0.
func TestWaitCodeOfFailedLaunch(t *testing.T) {
	for _, tc := range []struct {
		job  *phalanxv1.Job
		want int
	}{
		{&phalanxv1.Job{State: "FAILED", Reason: "JobLaunchFailure: prestart-workdir on gpu001: working directory \"/nope\" does not exist"}, 1},
		{&phalanxv1.Job{State: "NODE_FAIL"}, 1},
		{&phalanxv1.Job{State: "FAILED", ExitCode: 3}, 3},
		{&phalanxv1.Job{State: "CANCELLED", ExitSignal: 15}, 1},
		{&phalanxv1.Job{State: "CANCELLED"}, 0}, // cancelled while pending, as in Slurm
		{&phalanxv1.Job{State: "COMPLETED"}, 0},
	} {
		if got := waitCode(tc.job); got != tc.want {
			t.Errorf("%s %d:%d: code %d, want %d", tc.job.State, tc.job.ExitCode, tc.job.ExitSignal, got, tc.want)
		}
	}
}
