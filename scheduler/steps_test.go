package scheduler

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// caps builds idle nodes: leaves maps a leaf name to its node count; nodes
// are named leaf-N and have the given GPUs.
func caps(gpus int, leaves ...string) []*nodeCap {
	var out []*nodeCap
	for _, spec := range leaves {
		var leaf string
		var count int
		fmt.Sscanf(spec, "%s %d", &leaf, &count)
		for i := 1; i <= count; i++ {
			n := &cluster.Node{Name: fmt.Sprintf("%s-%d", leaf, i), GPUs: gpus, State: cluster.NodeUp}
			c := freeCapacity(n, cluster.NodeUsage{})
			c.leaf = leaf
			out = append(out, c)
		}
	}
	return out
}

func names(nodes []*nodeCap) []string {
	out := make([]string, len(nodes))
	for i, c := range nodes {
		out[i] = c.node.Name
	}
	return out
}

func TestAssemble(t *testing.T) {
	tests := []struct {
		leaves []string
		n      int
		want   []string // nil: no gang
	}{
		{[]string{"a 3", "b 2"}, 2, []string{"b-1", "b-2"}},                      // best fit: smallest leaf that holds it
		{[]string{"a 2", "b 2"}, 2, []string{"a-1", "a-2"}},                      // tie: lower leaf name
		{[]string{"a 1", "b 2", "c 3"}, 4, []string{"c-1", "c-2", "c-3", "a-1"}}, // fewest leaves, remainder best fit
		{[]string{"a 1", "b 2", "c 3"}, 5, []string{"c-1", "c-2", "c-3", "b-1", "b-2"}},
		{[]string{"a 1", "b 2"}, 4, nil},
	}
	for _, tt := range tests {
		got, ok := assemble(caps(8, tt.leaves...), tt.n)
		if ok != (tt.want != nil) || (ok && !reflect.DeepEqual(names(got), tt.want)) {
			t.Errorf("assemble(%v, %d) = %v, %v; want %v", tt.leaves, tt.n, names(got), ok, tt.want)
		}
	}
}

func TestAssemblePrefersFullerNodes(t *testing.T) {
	nodes := caps(8, "a 3")
	nodes[2].take(request{gpus: 6}) // a-3 has 2 GPUs left
	got, _ := assemble(fitting(nodes, request{nodes: 1, gpus: 2}), 1)
	if names(got)[0] != "a-3" {
		t.Fatalf("got %v, want the busiest node that fits, a-3", names(got))
	}
}

func TestTakeLowestGPUs(t *testing.T) {
	n := &cluster.Node{Name: "x", GPUs: 8, CPUs: 10, MemoryMB: 100}
	c := freeCapacity(n, cluster.NodeUsage{GPUs: []int{0, 2}, CPUs: 4, MemoryMB: 50})
	if !c.fits(request{gpus: 6, cpus: 6, memoryMB: 50}) || c.fits(request{gpus: 7}) || c.fits(request{cpus: 7}) {
		t.Fatalf("fits wrong for %+v", c)
	}
	a := c.take(request{gpus: 3, cpus: 1, memoryMB: 10})
	if !reflect.DeepEqual(a.GPUs, []int{1, 3, 4}) || c.cpus != 5 || c.memoryMB != 40 {
		t.Fatalf("take = %+v, left %+v", a, c)
	}
}

func TestQueueOrder(t *testing.T) {
	s := &Snapshot{Partitions: []*cluster.Partition{{Name: "hi", PriorityTier: 5}, {Name: "lo"}}}
	at := func(sec int) time.Time { return time.Unix(int64(sec), 0) }
	s.Jobs = []*cluster.Job{
		{ID: 1, Partition: "lo", Priority: 9, State: cluster.JobPending, SubmitTime: at(0)},
		{ID: 2, Partition: "hi", Priority: 0, State: cluster.JobPending, SubmitTime: at(9)},
		{ID: 3, Partition: "lo", Priority: 9, State: cluster.JobPending, SubmitTime: at(0)},
		{ID: 4, Partition: "lo", Priority: 9, State: cluster.JobPending, SubmitTime: at(-1)},
		{ID: 5, Partition: "lo", Priority: 10, State: cluster.JobRunning},
	}
	var got []cluster.JobID
	for _, j := range queue(s.Jobs, newPool(s)) {
		got = append(got, j.ID)
	}
	if want := []cluster.JobID{2, 4, 1, 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("queue = %v, want %v", got, want)
	}
}

func TestCandidates(t *testing.T) {
	s := &Snapshot{
		Nodes: []*cluster.Node{
			{Name: "n10", State: cluster.NodeUp, GPUModel: "NVIDIA H100"},
			{Name: "n9", State: cluster.NodeUp, GPUModel: "NVIDIA H100"},
			{Name: "n1", State: cluster.NodeDown, GPUModel: "NVIDIA H100"},
			{Name: "n2", State: cluster.NodeUp, GPUModel: "NVIDIA A100"},
			{Name: "n3", State: cluster.NodeUp, GPUModel: "NVIDIA H100"},
		},
		Partitions: []*cluster.Partition{{Name: "p", Nodes: []string{"n1", "n2", "n9", "n10"}}},
	}
	got := names(candidates(newPool(s).parts["p"], request{gpuType: "h100"}))
	if want := []string{"n9", "n10"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("candidates = %v, want %v", got, want)
	}
}
