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
		{Recorded: true, NTasks: true, NTasksPerNode: true, GPUsPerNode: true, GPUs: true, MemPerCPUMB: 4096, MemPerGPUMB: 81920},
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
