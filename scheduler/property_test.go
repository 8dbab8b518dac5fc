package scheduler

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// genSnapshot draws a small cluster with some jobs already running (placed
// by an earlier pass) and a queue of pending ones.
func genSnapshot(t *rapid.T, maxNodes int) *Snapshot {
	s := &Snapshot{}
	n := rapid.IntRange(1, maxNodes).Draw(t, "nodes")
	for i := 0; i < n; i++ {
		s.Nodes = append(s.Nodes, &cluster.Node{
			Name:     fmt.Sprintf("n%02d", i+1),
			GPUs:     rapid.IntRange(0, 8).Draw(t, "gpus"),
			CPUs:     rapid.IntRange(0, 32).Draw(t, "cpus"),
			MemoryMB: rapid.Int64Range(0, 1000).Draw(t, "mem"),
			GPUModel: rapid.SampledFrom([]string{"NVIDIA H100", "NVIDIA A100"}).Draw(t, "model"),
			Leaf:     rapid.SampledFrom([]string{"l1", "l2", "l3", "l4"}).Draw(t, "leaf"),
			State:    rapid.SampledFrom([]cluster.NodeState{cluster.NodeUp, cluster.NodeUp, cluster.NodeUp, cluster.NodeDown, cluster.NodeDrain}).Draw(t, "state"),
			Features: rapid.SampledFrom([][]string{nil, {"ib"}, {"ib", "nvme"}}).Draw(t, "features"),
			Weight:   rapid.IntRange(0, 2).Draw(t, "weight"),
		})
	}
	sub := &cluster.Partition{Name: "q", State: cluster.PartitionUp, PriorityTier: rapid.IntRange(0, 2).Draw(t, "tier"),
		PreemptMode: rapid.SampledFrom([]cluster.PreemptMode{cluster.PreemptOff, cluster.PreemptRequeue}).Draw(t, "preempt")}
	for _, node := range s.Nodes {
		if rapid.Bool().Draw(t, "inq") {
			sub.Nodes = append(sub.Nodes, node.Name)
		}
	}
	s.Partitions = []*cluster.Partition{{Name: "p", AllNodes: true, State: cluster.PartitionUp, PriorityTier: 1}, sub}
	first := genJobs(t, 1, n, "running")
	s.Jobs = first
	for _, pl := range Schedule(s, epoch).Placements {
		j := jobByID(s.Jobs, pl.Job)
		if err := cluster.Place(j, pl.Alloc, 1, epoch, pl.By); err != nil {
			t.Fatalf("place: %v", err)
		}
		if rapid.IntRange(0, 3).Draw(t, "signalled") == 0 {
			if s.Preempting == nil {
				s.Preempting = map[cluster.JobID]bool{}
			}
			s.Preempting[j.ID] = true
		}
	}
	s.Jobs = append(s.Jobs, genJobs(t, len(first)+1, n, "pending")...)
	return s
}

func genJobs(t *rapid.T, firstID, maxNodes int, label string) []*cluster.Job {
	var jobs []*cluster.Job
	count := rapid.IntRange(0, 8).Draw(t, label)
	for i := 0; i < count; i++ {
		jobs = append(jobs, &cluster.Job{
			ID:          cluster.JobID(firstID + i),
			Partition:   rapid.SampledFrom([]string{"p", "q"}).Draw(t, "part"),
			State:       cluster.JobPending,
			Nodes:       rapid.IntRange(1, maxNodes).Draw(t, "jobNodes"),
			GPUsPerNode: rapid.IntRange(0, 8).Draw(t, "jobGPUs"),
			CPUsPerNode: rapid.IntRange(0, 16).Draw(t, "jobCPUs"),
			MemoryMB:    rapid.Int64Range(0, 500).Draw(t, "jobMem"),
			GPUType:     rapid.SampledFrom([]string{"", "", "h100", "A100", "V100"}).Draw(t, "type"),
			Priority:    rapid.Int64Range(0, 3).Draw(t, "prio"),
			SubmitTime:  epoch.Add(time.Duration(rapid.IntRange(0, 3).Draw(t, "submit")) * time.Second),
			TimeLimit:   time.Duration(rapid.IntRange(0, 3).Draw(t, "limit")) * time.Hour,
			Exclusive:   rapid.IntRange(0, 4).Draw(t, "exclusive") == 0,
			Constraint:  rapid.SampledFrom([]string{"", "", "ib", "ib&nvme", "nvme|ib", "ib*1", "nvme*2", "[ib*1&nvme*1]"}).Draw(t, "constraint"),
			QoS:         rapid.SampledFrom([]cluster.QoS{"", "low", "high"}).Draw(t, "qos"),
			Requeued:    rapid.IntRange(0, 4).Draw(t, "requeued") == 0,
		})
	}
	return jobs
}

func jobByID(jobs []*cluster.Job, id cluster.JobID) *cluster.Job {
	for _, j := range jobs {
		if j.ID == id {
			return j
		}
	}
	return nil
}

func cloneSnapshot(s *Snapshot) *Snapshot {
	c := &Snapshot{Topology: s.Topology, Options: s.Options}
	if s.Preempting != nil {
		c.Preempting = map[cluster.JobID]bool{}
		for id := range s.Preempting {
			c.Preempting[id] = true
		}
	}
	for _, n := range s.Nodes {
		c.Nodes = append(c.Nodes, n.Clone())
	}
	for _, p := range s.Partitions {
		c.Partitions = append(c.Partitions, p.Clone())
	}
	for _, j := range s.Jobs {
		c.Jobs = append(c.Jobs, j.Clone())
	}
	return c
}

func TestScheduleProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot(t, 8)
		before := cloneSnapshot(s)
		plan := Schedule(s, epoch)
		if !reflect.DeepEqual(before, s) {
			t.Fatal("Schedule modified its snapshot")
		}
		checkPlan(t, s, plan)

		shuffled := cloneSnapshot(s)
		permute(t, shuffled.Nodes)
		permute(t, shuffled.Jobs)
		permute(t, shuffled.Partitions)
		if again := Schedule(shuffled, epoch); !reflect.DeepEqual(plan, again) {
			t.Fatalf("same state in another order gave another plan:\n%+v\n%+v", plan, again)
		}
	})
}

func permute[T any](t *rapid.T, xs []T) {
	for i := len(xs) - 1; i > 0; i-- {
		j := rapid.IntRange(0, i).Draw(t, "swap")
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// checkPlan asserts the plan's invariants: every pending job is either
// placed whole or has a reason; gangs are exactly the shape asked on
// distinct, eligible nodes; no GPU index, CPU or MB is given twice.
func checkPlan(t *rapid.T, s *Snapshot, plan *Plan) {
	nodes := map[string]*cluster.Node{}
	for _, n := range s.Nodes {
		nodes[n.Name] = n
	}
	held := map[string]*cluster.NodeUsage{}
	for _, n := range s.Nodes {
		held[n.Name] = &cluster.NodeUsage{}
	}
	holders, exclusive := map[string]int{}, map[string]bool{}
	addUsage := func(a cluster.NodeAlloc, excl bool, what string) {
		holders[a.Node]++
		exclusive[a.Node] = exclusive[a.Node] || excl
		if exclusive[a.Node] && holders[a.Node] > 1 {
			t.Fatalf("%s: %s is shared with an exclusive job", what, a.Node)
		}
		u := held[a.Node]
		for _, g := range a.GPUs {
			for _, h := range u.GPUs {
				if g == h {
					t.Fatalf("%s: GPU %d of %s given twice", what, g, a.Node)
				}
			}
			if g < 0 || g >= nodes[a.Node].GPUs {
				t.Fatalf("%s: GPU %d does not exist on %s", what, g, a.Node)
			}
			u.GPUs = append(u.GPUs, g)
		}
		u.CPUs += a.CPUs
		u.MemoryMB += a.MemoryMB
		if u.CPUs > nodes[a.Node].CPUs || u.MemoryMB > nodes[a.Node].MemoryMB {
			t.Fatalf("%s: %s oversubscribed: %+v", what, a.Node, *u)
		}
	}
	for _, j := range s.Jobs {
		if j.Live() {
			for _, a := range j.Alloc.Nodes {
				addUsage(a, j.Exclusive, "live job "+j.ID.String())
			}
		}
	}
	placed := map[cluster.JobID]bool{}
	for _, pl := range plan.Placements {
		j := jobByID(s.Jobs, pl.Job)
		if j == nil || j.State != cluster.JobPending || placed[j.ID] {
			t.Fatalf("placement for job %d, which is not a pending job or is placed twice", pl.Job)
		}
		placed[j.ID] = true
		checkGang(t, s, j, pl.Alloc, nodes)
		for _, a := range pl.Alloc.Nodes {
			addUsage(a, j.Exclusive, "placement of "+j.ID.String())
		}
	}
	for _, j := range s.Jobs {
		_, waits := plan.Pending[j.ID]
		if j.State == cluster.JobPending && placed[j.ID] == waits {
			t.Fatalf("job %d: placed=%v, has a pending reason=%v", j.ID, placed[j.ID], waits)
		}
		if at := plan.Pending[j.ID].ExpectedStart; !at.IsZero() && at.Before(epoch) {
			t.Fatalf("job %d: expected start %v is before now", j.ID, at)
		}
	}
	checkPreemptions(t, s, plan, placed)
}

// checkPreemptions: a victim is a running job of a REQUEUE partition, not
// already leaving, chosen once, of a strictly lower class than the pending,
// unplaced job it is preempted for.
func checkPreemptions(t *rapid.T, s *Snapshot, plan *Plan, placed map[cluster.JobID]bool) {
	classOf := func(j *cluster.Job) class {
		c := class{qos: j.QoS.Level()}
		for _, p := range s.Partitions {
			if p.Name == j.Partition {
				c.tier = p.PriorityTier
			}
		}
		return c
	}
	seen := map[cluster.JobID]bool{}
	for _, pr := range plan.Preemptions {
		v, f := jobByID(s.Jobs, pr.Victim), jobByID(s.Jobs, pr.For)
		if v == nil || f == nil || seen[v.ID] || !v.Live() || (v.State != cluster.JobRunning && v.State != cluster.JobConfiguring) || s.Preempting[v.ID] {
			t.Fatalf("preemption %+v: victim missing, repeated, not running or already leaving", pr)
		}
		seen[v.ID] = true
		if f.State != cluster.JobPending || placed[f.ID] || !classOf(v).below(classOf(f)) {
			t.Fatalf("preemption %+v: %d is not a waiting job of a higher class than %d", pr, f.ID, v.ID)
		}
		for _, p := range s.Partitions {
			if p.Name == v.Partition && p.PreemptMode != "REQUEUE" {
				t.Fatalf("preemption %+v: victim's partition %s is not preemptible", pr, p.Name)
			}
		}
	}
}

func checkGang(t *rapid.T, s *Snapshot, j *cluster.Job, alloc cluster.Allocation, nodes map[string]*cluster.Node) {
	if len(alloc.Nodes) != j.Nodes {
		t.Fatalf("job %d: %d nodes, asked %d", j.ID, len(alloc.Nodes), j.Nodes)
	}
	part := s.Partitions[0]
	for _, p := range s.Partitions {
		if p.Name == j.Partition {
			part = p
		}
	}
	seen := map[string]bool{}
	feat, _ := cluster.ParseConstraint(j.Constraint)
	var gang []*cluster.Node
	for _, a := range alloc.Nodes {
		gang = append(gang, nodes[a.Node])
		n := nodes[a.Node]
		if n == nil || seen[a.Node] || n.State != cluster.NodeUp || !part.Contains(a.Node) || !modelOK(strings.ToLower(j.GPUType), n) || !feat.Match(n.Features) {
			t.Fatalf("job %d: node %s is unknown, repeated, not UP, outside %s, the wrong model or lacks features %q", j.ID, a.Node, part.Name, j.Constraint)
		}
		seen[a.Node] = true
		gpus, cpus := j.GPUsPerNode, j.CPUsPerNode
		if j.Exclusive { // every GPU and CPU of the node, as Slurm gives an exclusive job
			gpus, cpus = n.GPUs, n.CPUs
		}
		if len(a.GPUs) != gpus || a.CPUs != cpus || a.MemoryMB != j.MemoryMB {
			t.Fatalf("job %d: %+v does not match the request (exclusive %v)", j.ID, a, j.Exclusive)
		}
	}
	if !hallCounts(gang, feat.Counts) {
		t.Fatalf("job %d: gang %v does not hold the node counts of %q", j.ID, alloc.Nodes, j.Constraint)
	}
}

// hallCounts checks node counts the slow way (Hall's condition): for every
// subset of the counts, the nodes with one of their features are at least
// as many as the subset asks for together.
func hallCounts(nodes []*cluster.Node, counts []cluster.FeatureCount) bool {
	for set := 1; set < 1<<len(counts); set++ {
		want, have := 0, 0
		for c, fc := range counts {
			if set&(1<<c) != 0 {
				want += fc.Nodes
			}
		}
		for _, n := range nodes {
			for c, fc := range counts {
				if set&(1<<c) != 0 && slices.Contains(n.Features, fc.Feature) {
					have++
					break
				}
			}
		}
		if have < want {
			return false
		}
	}
	return true
}
