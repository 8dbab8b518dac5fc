package codec

import (
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// A job's request form survives its stored form, and a job stored before
// it was recorded reads back without one.
func TestJobRequestFormRoundTrip(t *testing.T) {
	for _, f := range []cluster.RequestForm{
		{Recorded: true, NTasks: true, NTasksPerNode: true, GPUsPerNode: true, GPUs: true, MemPerCPUMB: 4096, MemPerGPUMB: 81920, GPUsPerTask: true},
		{Recorded: true, GPUs: true, GPUsSplit: true},
		{Recorded: true},
		{},
	} {
		j := &cluster.Job{ID: 7, Name: "train", User: "alice", WorkDir: "/home/alice", Nodes: 2, State: cluster.JobPending,
			SubmitTime: time.Unix(1700000000, 0), RequestForm: f}
		r, err := Job(j)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FromJob(r)
		if err != nil {
			t.Fatal(err)
		}
		if got.RequestForm != f {
			t.Errorf("request form %+v read back as %+v", f, got.RequestForm)
		}
	}
}

// The job an attempt was preempted for, with its pending attempt, survives
// the stored form; an attempt stored without one reads back as none.
func TestAttemptPreemptedForRoundTrip(t *testing.T) {
	for _, f := range []cluster.JobAttempt{{Job: 12, Attempt: 3}, {Job: 12}, {}} {
		j := &cluster.Job{ID: 7, Name: "train", User: "alice", WorkDir: "/home/alice", Nodes: 1, State: cluster.JobPending,
			SubmitTime: time.Unix(1700000000, 0), Attempt: 1, Requeued: true,
			Attempts: []cluster.Attempt{{Attempt: 0, Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1", GPUs: []int{0}}}},
				StartTime: time.Unix(1700000100, 0), EndTime: time.Unix(1700000200, 0), State: cluster.JobPreempted,
				Reason: cluster.ReasonPreempted, PreemptedFor: f}}}
		r, err := Job(j)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FromJob(r)
		if err != nil {
			t.Fatal(err)
		}
		if got.Attempts[0].PreemptedFor != f {
			t.Errorf("preempted for %+v read back as %+v", f, got.Attempts[0].PreemptedFor)
		}
	}
}
