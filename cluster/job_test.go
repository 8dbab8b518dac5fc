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

func TestRefNamesArrayTasks(t *testing.T) {
	if got := (&Job{ID: 91, Array: &ArrayTask{JobID: 90, TaskID: 1}}).Ref(); got != "90_1" {
		t.Errorf("array task ref %q; want 90_1", got)
	}
	if got := (&Job{ID: 7}).Ref(); got != "7" {
		t.Errorf("job ref %q; want 7", got)
	}
}
