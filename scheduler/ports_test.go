package scheduler

import (
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// MASTER_PORT comes with the plan: the lowest port of the range that no
// live job with rank 0 on the same node holds, nor a placement made before
// in the pass; a job whose rank-0 node has none left waits with
// ReasonMasterPorts, and the job behind it may use the nodes it left.
func TestPlacementsCarryAFreeMasterPort(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	node := func(name string) *cluster.Node {
		return &cluster.Node{Name: name, GPUs: 8, CPUs: 64, MemoryMB: 1 << 20, State: cluster.NodeUp}
	}
	job := func(id cluster.JobID, nodelist ...string) *cluster.Job {
		return &cluster.Job{ID: id, Partition: "gpu", Nodes: len(nodelist), GPUsPerNode: 1, NodeList: nodelist,
			State: cluster.JobPending, SubmitTime: now.Add(-time.Duration(10-id) * time.Minute)}
	}
	live := &cluster.Job{ID: 1, Partition: "gpu", Nodes: 1, GPUsPerNode: 1, State: cluster.JobRunning, MasterPort: 29500,
		Alloc: &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "a", GPUs: []int{0}}}},
		Tasks: []cluster.Task{{Node: "a", State: cluster.TaskRunning}}}
	snap := &Snapshot{
		Nodes:      []*cluster.Node{node("a"), node("b")},
		Partitions: []*cluster.Partition{{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp}},
		Jobs:       []*cluster.Job{live, job(2, "a"), job(3, "a"), job(4, "b"), job(5, "b")},
		Options:    Options{MasterPortMin: 29500, MasterPortMax: 29501},
	}
	plan := Schedule(snap, now)
	got := map[cluster.JobID]int{}
	for _, p := range plan.Placements {
		got[p.Job] = p.MasterPort
	}
	want := map[cluster.JobID]int{2: 29501, 4: 29500, 5: 29501}
	if len(got) != len(want) || got[2] != want[2] || got[4] != want[4] || got[5] != want[5] {
		t.Errorf("placed with ports %v; want %v", got, want)
	}
	if r := plan.Pending[3].Reason; r != ReasonMasterPorts {
		t.Errorf("job 3 (node a's ports used up) waits for %q; want %q", r, ReasonMasterPorts)
	}

	snap.Options = Options{}
	for _, p := range Schedule(snap, now).Placements {
		if p.MasterPort != 0 {
			t.Errorf("without a range job %d got port %d; want 0", p.Job, p.MasterPort)
		}
	}
}
