package scheduler

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// TestOracle compares the scheduler with a brute-force placer on clusters of
// at most six nodes: for one pending job, both must agree on whether it can
// start now and on the fewest leaves it can span; Feasible must agree with
// an exhaustive search that ignores usage and node state.
func TestOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot(t, 6)
		var live []*cluster.Job
		for _, x := range s.Jobs {
			if x.Live() {
				live = append(live, x)
			}
		}
		// Several probes per cluster: each is scheduled alone beside the
		// live jobs.
		probes := append(genJobs(t, 1000, len(s.Nodes), "probes"), genJobs(t, 2000, len(s.Nodes), "more probes")...)
		for _, probe := range probes {
			s.Jobs = append(live[:len(live):len(live)], probe)
			checkOracle(t, s, probe)
		}
	})
}

func checkOracle(t *rapid.T, s *Snapshot, probe *cluster.Job) {
	plan := Schedule(s, epoch)
	wantLeaves, canNow := bruteForce(s, probe, true)
	placed := len(plan.Placements) == 1
	if placed != canNow {
		t.Fatalf("job %+v: scheduler placed=%v, oracle says %v (plan %+v)", probe, placed, canNow, plan)
	}
	if placed {
		gotLeaves := map[string]bool{}
		for _, a := range plan.Placements[0].Alloc.Nodes {
			gotLeaves[nodeNamed(s, a.Node).Leaf] = true
		}
		if len(gotLeaves) != wantLeaves {
			t.Fatalf("gang spans %d leaves, oracle finds %d", len(gotLeaves), wantLeaves)
		}
	}
	_, ever := bruteForce(s, probe, false)
	err := Feasible(s, probe)
	if (err == nil) != ever {
		t.Fatalf("Feasible = %v, oracle says ever possible = %v", err, ever)
	}
	if err != nil && !errors.Is(err, cluster.ErrUnsatisfiable) {
		t.Fatalf("Feasible error %v does not wrap ErrUnsatisfiable", err)
	}
}

func nodeNamed(s *Snapshot, name string) *cluster.Node {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// bruteForce tries every set of j.Nodes nodes. With now, a node must be UP
// and have the request free beside the live jobs; without, it only needs the
// resources. It returns the fewest leaves over valid sets and whether any
// set is valid.
func bruteForce(s *Snapshot, j *cluster.Job, now bool) (int, bool) {
	var part *cluster.Partition
	for _, p := range s.Partitions {
		if p.Name == j.Partition {
			part = p
		}
	}
	var ok []*cluster.Node
	for _, n := range s.Nodes {
		if part.Contains(n.Name) && oracleFits(s, n, j, now) {
			ok = append(ok, n)
		}
	}
	best, found := 0, false
	for mask := 0; mask < 1<<len(ok); mask++ {
		var set []*cluster.Node
		for i, n := range ok {
			if mask&(1<<i) != 0 {
				set = append(set, n)
			}
		}
		if len(set) != j.Nodes {
			continue
		}
		leaves := map[string]bool{}
		for _, n := range set {
			leaves[n.Leaf] = true
		}
		if !found || len(leaves) < best {
			best, found = len(leaves), true
		}
	}
	return best, found
}

func oracleFits(s *Snapshot, n *cluster.Node, j *cluster.Job, now bool) bool {
	if j.GPUType != "" && !strings.Contains(strings.ToLower(n.GPUModel), strings.ToLower(j.GPUType)) {
		return false
	}
	gpus, cpus, mem := n.GPUs, n.CPUs, n.MemoryMB
	if now {
		if n.State != cluster.NodeUp {
			return false
		}
		for _, x := range s.Jobs {
			if !x.Live() {
				continue
			}
			for _, a := range x.Alloc.Nodes {
				if a.Node == n.Name {
					gpus, cpus, mem = gpus-len(a.GPUs), cpus-a.CPUs, mem-a.MemoryMB
				}
			}
		}
	}
	return gpus >= j.GPUsPerNode && cpus >= j.CPUsPerNode && mem >= j.MemoryMB
}
