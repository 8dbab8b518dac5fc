package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// A matching OR ([a100|h100]) places every node of the job on one
// alternative: the first that fits now; it could run only when one
// alternative alone has the nodes.
func TestMatchingOr(t *testing.T) {
	node := func(name, feature string) *cluster.Node {
		return &cluster.Node{Name: name, State: cluster.NodeUp, GPUs: 8, CPUs: 64, MemoryMB: 1 << 19, Features: []string{feature}}
	}
	nodes := []*cluster.Node{node("a1", "a100"), node("a2", "a100"), node("h1", "h100"), node("h2", "h100"), node("h3", "h100")}
	parts := []*cluster.Partition{{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp}}
	s := &Snapshot{Nodes: nodes, Partitions: parts}
	pending := func(id cluster.JobID, n int, c string) *cluster.Job {
		return &cluster.Job{ID: id, Partition: "gpu", State: cluster.JobPending, Nodes: n, GPUsPerNode: 8, Constraint: c,
			TimeLimit: time.Hour, SubmitTime: epoch}
	}
	if err := Feasible(s, pending(1, 4, "[a100|h100]")); !errors.Is(err, cluster.ErrUnsatisfiable) || !strings.Contains(err.Error(), "no other alternative (h100) can run either") {
		t.Errorf("4 nodes of one generation, of 2 and 3: %v, want unsatisfiable, naming every alternative", err)
	}
	if err := Feasible(s, pending(1, 4, "a100|h100")); err != nil {
		t.Errorf("4 nodes of either: %v", err)
	}
	if err := Feasible(s, pending(1, 3, "[a100|h100]")); err != nil {
		t.Errorf("3 nodes of one generation: %v", err)
	}

	// a1 is busy: a 2-node job cannot take both A100s now, so it takes two
	// H100s, never one of each.
	alloc := cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "a1", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}}}}
	busy := &cluster.Job{ID: 9, Partition: "gpu", State: cluster.JobRunning, Nodes: 1, GPUsPerNode: 8, TimeLimit: time.Hour,
		StartTime: epoch, Alloc: &alloc, Tasks: []cluster.Task{{Rank: 0, Node: "a1", State: cluster.TaskRunning}}}
	s.Jobs = []*cluster.Job{busy, pending(1, 2, "[a100|h100]")}
	plan := Schedule(s, epoch.Add(time.Minute))
	if len(plan.Placements) != 1 {
		t.Fatalf("placements %+v, pending %+v", plan.Placements, plan.Pending)
	}
	for _, a := range plan.Placements[0].Alloc.Nodes {
		if a.Node[0] != 'h' {
			t.Errorf("placed on %v: want H100 nodes only", plan.Placements[0].Alloc.Nodes)
		}
	}
	// Three A100 nodes can never be: with the H100s busy too it waits for
	// them (the first alternative that could run), not BadConstraints.
	s.Jobs = []*cluster.Job{busy, pending(2, 3, "[a100|h100]")}
	for _, h := range []string{"h1", "h2", "h3"} {
		a := cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: h, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}}}}
		s.Jobs = append(s.Jobs, &cluster.Job{ID: cluster.JobID(10 + len(s.Jobs)), Partition: "gpu", State: cluster.JobRunning, Nodes: 1,
			GPUsPerNode: 8, TimeLimit: time.Hour, StartTime: epoch, Alloc: &a, Tasks: []cluster.Task{{Rank: 0, Node: h, State: cluster.TaskRunning}}})
	}
	plan = Schedule(s, epoch.Add(time.Minute))
	if info, ok := plan.Pending[2]; len(plan.Placements) != 0 || !ok || info.Reason != cluster.ReasonResources {
		t.Errorf("placements %+v, pending %+v; want job 2 waiting for Resources", plan.Placements, plan.Pending)
	}
}
