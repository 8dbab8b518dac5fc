package cluster

import "testing"

func TestInQueue(t *testing.T) {
	for st, want := range map[JobState]bool{
		JobPending: true, JobConfiguring: true, JobRunning: true, JobPreempted: true,
		JobCompleted: false, JobFailed: false, JobCancelled: false, JobTimeout: false, JobNodeFail: false,
	} {
		if got := (&Job{State: st}).InQueue(); got != want {
			t.Errorf("%s: InQueue = %v, want %v", st, got, want)
		}
	}
}
