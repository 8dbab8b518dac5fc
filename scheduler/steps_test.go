package scheduler

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology"
)

// leafPass builds a pass over idle nodes: each spec is "leaf count", nodes
// are named leaf-N with the given GPUs. It returns the pass and one group
// per leaf holding all its nodes.
func leafPass(gpus int, specs ...string) (*pass, []group) {
	s := &Snapshot{}
	for _, spec := range specs {
		var leaf string
		var count int
		fmt.Sscanf(spec, "%s %d", &leaf, &count)
		for i := 1; i <= count; i++ {
			s.Nodes = append(s.Nodes, &cluster.Node{Name: fmt.Sprintf("%s-%d", leaf, i), GPUs: gpus, Leaf: leaf, State: cluster.NodeUp})
		}
	}
	p := newPass(s, epoch)
	var groups []group
	for i := range p.nodes {
		if len(groups) == 0 || groups[len(groups)-1].leaf != p.nodes[i].leaf {
			groups = append(groups, group{leaf: p.nodes[i].leaf})
		}
		groups[len(groups)-1].nodes = append(groups[len(groups)-1].nodes, int32(i))
	}
	return p, groups
}

func TestPickLeaves(t *testing.T) {
	tests := []struct {
		leaves    []string
		n         int
		maxLeaves int
		want      []string // nil: no gang
	}{
		{[]string{"a 3", "b 2"}, 2, 0, []string{"b-1", "b-2"}},                      // best fit: smallest leaf that holds it
		{[]string{"a 2", "b 2"}, 2, 0, []string{"a-1", "a-2"}},                      // tie: first leaf
		{[]string{"a 1", "b 2", "c 3"}, 4, 0, []string{"c-1", "c-2", "c-3", "a-1"}}, // fewest leaves, remainder best fit
		{[]string{"a 1", "b 2", "c 3"}, 5, 0, []string{"c-1", "c-2", "c-3", "b-1", "b-2"}},
		{[]string{"a 1", "b 2", "c 3"}, 5, 1, nil}, // --switches=1 while waiting
		{[]string{"a 1", "b 2"}, 4, 0, nil},
	}
	for _, tt := range tests {
		p, groups := leafPass(8, tt.leaves...)
		got, ok := p.pickLeaves(groups, tt.n, tt.maxLeaves, false)
		if ok != (tt.want != nil) || (ok && !reflect.DeepEqual(p.names(got), tt.want)) {
			t.Errorf("pickLeaves(%v, %d) = %v, %v; want %v", tt.leaves, tt.n, p.names(got), ok, tt.want)
		}
	}
}

func TestPickLeavesPrefersOneSpine(t *testing.T) {
	// Leaves of three nodes; leaf1 and leaf2 under spine1, leaf3 and leaf4
	// under spine2.
	tree, names := topology.Generate(4, 3, 2, "n")
	s := &Snapshot{Topology: tree, Partitions: []*cluster.Partition{{Name: "p", AllNodes: true, State: cluster.PartitionUp}}}
	for _, n := range names {
		s.Nodes = append(s.Nodes, &cluster.Node{Name: n, GPUs: 8, State: cluster.NodeUp})
	}
	// Job 1 fills leaf2 and one node of leaf3 and of leaf4. Free: leaf1 3,
	// leaf3 2, leaf4 2. A four-node gang needs two leaves: leaf1 plus one
	// of spine2 would cross the core; leaf3 plus leaf4 stay under spine2.
	s.Jobs = []*cluster.Job{
		{ID: 1, State: cluster.JobPending, Partition: "p", Nodes: 5, GPUsPerNode: 8,
			NodeList: []string{"n0004", "n0005", "n0006", "n0007", "n0010"}},
		{ID: 2, State: cluster.JobPending, Partition: "p", Nodes: 4, GPUsPerNode: 8, SubmitTime: epoch.Add(time.Second)},
	}
	plan := Schedule(s, epoch)
	if len(plan.Placements) != 2 {
		t.Fatalf("plan %+v", plan)
	}
	var got []string
	for _, a := range plan.Placements[1].Alloc.Nodes {
		got = append(got, a.Node)
	}
	if want := []string{"n0008", "n0009", "n0011", "n0012"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("gang on %v, want %v (two leaves under one spine)", got, want)
	}
}

func TestTakeLowestGPUs(t *testing.T) {
	s := &Snapshot{Nodes: []*cluster.Node{{Name: "x", GPUs: 8, CPUs: 10, MemoryMB: 100, State: cluster.NodeUp}}}
	s.Jobs = []*cluster.Job{{ID: 1, State: cluster.JobRunning, Alloc: &cluster.Allocation{Nodes: []cluster.NodeAlloc{
		{Node: "x", GPUs: []int{0, 2}, CPUs: 4, MemoryMB: 50}}}, Tasks: []cluster.Task{{State: cluster.TaskRunning}}}}
	p := newPass(s, epoch)
	c := &p.nodes[0]
	if !c.fits(&request{gpus: 6, cpus: 6, mem: 50}) || c.fits(&request{gpus: 7}) || c.fits(&request{cpus: 7}) || c.fits(&request{excl: true}) {
		t.Fatalf("fits wrong for %+v", c)
	}
	a := p.take(0, &request{gpus: 3, cpus: 1, mem: 10}, forever)
	if !reflect.DeepEqual(a.GPUs, []int{1, 3, 4}) || c.cpus != 5 || c.mem != 40 || c.ngpu != 3 {
		t.Fatalf("take = %+v, left %+v", a, c)
	}
}

func TestBestNodesPrefersFullerNodes(t *testing.T) {
	p, _ := leafPass(8, "a 3")
	p.take(2, &request{gpus: 6}, forever) // a-3 has 2 GPUs left
	got := p.bestNodes([]int32{0, 1, 2}, 1)
	if p.names(got)[0] != "a-3" {
		t.Fatalf("got %v, want the busiest node that fits, a-3", p.names(got))
	}
}

func TestQueueOrder(t *testing.T) {
	at := func(sec int) time.Time { return epoch.Add(time.Duration(sec) * time.Second) }
	jobs := []*cluster.Job{
		{ID: 1, Partition: "lo", Priority: 9, State: cluster.JobPending, SubmitTime: at(0)},
		{ID: 2, Partition: "hi", Priority: 0, State: cluster.JobPending, SubmitTime: at(9)},
		{ID: 3, Partition: "lo", Priority: 9, State: cluster.JobPending, SubmitTime: at(0)},
		{ID: 4, Partition: "lo", Priority: 9, State: cluster.JobPending, SubmitTime: at(-1)},
		{ID: 5, Partition: "lo", Priority: 10, State: cluster.JobRunning},
		{ID: 6, Partition: "lo", QoS: "low", Priority: 5000, State: cluster.JobPending},
		{ID: 7, Partition: "lo", QoS: "high", State: cluster.JobPending, SubmitTime: at(5)},
		{ID: 8, Partition: "lo", Requeued: true, State: cluster.JobPending, SubmitTime: at(5)},
		{ID: 9, Partition: "lo", Priority: 9, Nice: 1, State: cluster.JobPending, SubmitTime: at(-1)},
	}
	tier := func(p string) int {
		if p == "hi" {
			return 5
		}
		return 0
	}
	var got []cluster.JobID
	for _, r := range queue(jobs, tier, at(0), Options{}) {
		got = append(got, r.job.ID)
	}
	if want := []cluster.JobID{2, 7, 8, 4, 1, 3, 9, 6}; !reflect.DeepEqual(got, want) {
		t.Fatalf("queue = %v, want %v", got, want)
	}
}

func TestPriorityFormula(t *testing.T) {
	j := &cluster.Job{QoS: "high", Priority: 7, Nice: 3, Nodes: 2, GPUsPerNode: 8, SubmitTime: epoch}
	o := Options{FairShare: func(*cluster.Job) int64 { return 100 }}
	if got, want := Priority(j, epoch.Add(90*time.Minute), o), int64(2_000_000+7-3+90+16+100); got != want {
		t.Fatalf("Priority = %d, want %d", got, want)
	}
	if got := Priority(j, epoch.Add(30*24*time.Hour), Options{}); got != 2_000_000+7-3+ageCapMin+16 {
		t.Fatalf("age is not capped: %d", got)
	}
}

func TestCandidates(t *testing.T) {
	s := &Snapshot{
		Nodes: []*cluster.Node{
			{Name: "n10", State: cluster.NodeUp, GPUModel: "NVIDIA H100", Features: []string{"ib"}},
			{Name: "n9", State: cluster.NodeUp, GPUModel: "NVIDIA H100", Features: []string{"ib"}},
			{Name: "n1", State: cluster.NodeDown, GPUModel: "NVIDIA H100", Features: []string{"ib"}},
			{Name: "n2", State: cluster.NodeUp, GPUModel: "NVIDIA A100", Features: []string{"ib"}},
			{Name: "n3", State: cluster.NodeUp, GPUModel: "NVIDIA H100", Features: []string{"ib"}},
			{Name: "n4", State: cluster.NodeUp, GPUModel: "NVIDIA H100"},
		},
		Partitions: []*cluster.Partition{{Name: "p", Nodes: []string{"n1", "n2", "n4", "n9", "n10", "n3"}}},
	}
	p := newPass(s, epoch)
	cs := p.set(&cluster.Job{Partition: "p", GPUType: "H100", Constraint: "ib", Exclude: []string{"n3"}})
	var got []string
	for _, cl := range cs.leaves {
		got = append(got, p.names(cl.nodes)...)
	}
	if want := []string{"n9", "n10"}; !reflect.DeepEqual(got, want) || len(cs.static) != 3 {
		t.Fatalf("candidates = %v (static %d), want %v (static 3: n1 too)", got, len(cs.static), want)
	}
}

func TestTimeline(t *testing.T) {
	p, _ := leafPass(8, "a 1")
	hour := int64(time.Hour)
	p.take(0, &request{gpus: 6}, p.nowNs+hour)                              // a job until +1h
	p.addUse(0, use{from: p.nowNs + 2*hour, to: p.nowNs + 3*hour, gpus: 6}) // a reservation
	p.markReserved(0)
	r := &request{gpus: 4}
	if got := p.earliest(0, r, 30*time.Minute); got != p.nowNs+hour {
		t.Errorf("earliest 4 GPUs for 30m = %v, want +1h", time.Duration(got-p.nowNs))
	}
	if got := p.earliest(0, r, 2*time.Hour); got != p.nowNs+3*hour {
		t.Errorf("earliest 4 GPUs for 2h = %v, want +3h (after the reservation)", time.Duration(got-p.nowNs))
	}
	if !p.fitsOver(0, &request{gpus: 2}, p.nowNs, forever) || p.fitsOver(0, &request{gpus: 5}, p.nowNs+hour, forever) {
		t.Error("fitsOver ignores the reservation")
	}
	if got := p.earliest(0, &request{excl: true}, 0); got != p.nowNs+3*hour {
		t.Errorf("exclusive without a limit = %v, want +3h (after the reservation)", time.Duration(got-p.nowNs))
	}
	p.addUse(0, use{from: p.nowNs + 4*hour, to: forever, gpus: 1})
	if got := p.earliest(0, &request{excl: true}, 0); got != forever {
		t.Errorf("exclusive without a limit before an endless reservation = %v, want never", time.Duration(got-p.nowNs))
	}
}
