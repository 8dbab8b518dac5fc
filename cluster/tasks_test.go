package cluster

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestSetNodes(t *testing.T) {
	split := RequestForm{Recorded: true, GPUs: true, GPUsSplit: true}
	for _, tc := range []struct {
		name string
		job  Job
		n    int
		want Job    // the job after; ignored when refused
		err  string // error substring; empty: accepted
	}{
		{"no -G: the count per node stays", Job{Nodes: 2, GPUsPerNode: 4, RequestForm: RequestForm{Recorded: true, GPUsPerNode: true}}, 3,
			Job{Nodes: 3, GPUsPerNode: 4}, ""},
		{"-G alone split again", Job{Nodes: 1, GPUsPerNode: 8, RequestForm: split}, 4, Job{Nodes: 4, GPUsPerNode: 2}, ""},
		{"--mem-per-gpu follows the GPUs", Job{Nodes: 2, GPUsPerNode: 2, MemoryMB: 2048, RequestForm: RequestForm{Recorded: true, GPUs: true, GPUsSplit: true, MemPerGPUMB: 1024}}, 1,
			Job{Nodes: 1, GPUsPerNode: 4, MemoryMB: 4096}, ""},
		{"-G 0 stays 0", Job{Nodes: 2, RequestForm: split}, 3, Job{Nodes: 3}, ""},
		{"-G 0 beside --gpus-per-node=0", Job{Nodes: 2, RequestForm: RequestForm{Recorded: true, GPUs: true, GPUsPerNode: true}}, 1, Job{Nodes: 1}, ""},
		{"the same count", Job{Nodes: 2, GPUsPerNode: 2, RequestForm: RequestForm{Recorded: true, GPUs: true}}, 2, Job{Nodes: 2, GPUsPerNode: 2}, ""},
		{"not evenly", Job{ID: 5, Nodes: 2, GPUsPerNode: 4, GPUType: "a100", RequestForm: split}, 3, Job{},
			"NumNodes=3: job 5 asked for --gpus=a100:8, which 3 nodes cannot share evenly (every node gets the same GPUs): give a node count that divides 8"},
		{"-G with --gpus-per-task", Job{ID: 6, Nodes: 2, GPUsPerNode: 1, GPUsPerTask: 1, RequestForm: RequestForm{Recorded: true, NTasks: true, GPUs: true}}, 1, Job{},
			"NumNodes=1: job 6 asked for --gpus=2 with GPUs per node or per task, which make 2 nodes: keep NumNodes=2, or cancel the job and submit it again with -N 1"},
		{"no node", Job{Nodes: 1}, 0, Job{}, "NumNodes=0: ask for at least 1 node"},
		{"memory overflows", Job{ID: 7, Nodes: 2, GPUsPerNode: 2, RequestForm: RequestForm{Recorded: true, GPUs: true, GPUsSplit: true, MemPerGPUMB: math.MaxInt64 / 3}}, 1, Job{},
			"NumNodes=1: job 7's --mem-per-gpu=3074457345618258602 times 4 GPUs a node is more memory than any node has"},
	} {
		j := tc.job
		err := j.SetNodes(tc.n)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v; want accepted", tc.name, err)
		case tc.err != "" && (err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v; want ErrInvalid saying %q", tc.name, err, tc.err)
		case tc.err != "" && (j.Nodes != tc.job.Nodes || j.GPUsPerNode != tc.job.GPUsPerNode || j.MemoryMB != tc.job.MemoryMB):
			t.Errorf("%s: refused, but the job changed to %d nodes of %d GPUs, %d MB", tc.name, j.Nodes, j.GPUsPerNode, j.MemoryMB)
		case tc.err == "" && (j.Nodes != tc.want.Nodes || j.GPUsPerNode != tc.want.GPUsPerNode || j.MemoryMB != tc.want.MemoryMB):
			t.Errorf("%s: %d nodes of %d GPUs, %d MB; want %d of %d, %d MB", tc.name, j.Nodes, j.GPUsPerNode, j.MemoryMB, tc.want.Nodes, tc.want.GPUsPerNode, tc.want.MemoryMB)
		}
	}
}
