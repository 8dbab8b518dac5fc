package scheduler

import (
	"strings"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// oracle is the brute-force placer: it tries every set of j.Nodes nodes.
type oracle struct {
	s *Snapshot
	j *cluster.Job
}

// best returns the fewest leaves over valid sets and whether one exists.
// With now, nodes must be UP with the request free beside the live jobs
// (an exclusive job: idle; nobody beside an exclusive job) and the leaf
// limit of --switches holds while the job waits for it; without, only the
// node's own resources count. A set that fits inside one block is
// preferred, as the placer promises, when the topology has blocks.
func (o *oracle) best(now bool) (int, bool) {
	var ok []*cluster.Node
	for _, n := range o.s.Nodes {
		if o.nodeOK(n, now) {
			ok = append(ok, n)
		}
	}
	best, found, inBlock := 0, false, false
	for mask := 0; mask < 1<<len(ok); mask++ {
		var set []*cluster.Node
		for i, n := range ok {
			if mask&(1<<i) != 0 {
				set = append(set, n)
			}
		}
		if !o.setOK(set, now) {
			continue
		}
		leaves := o.count(set, o.s.Topology.LeafOf)
		one := len(o.s.Topology.Blocks()) > 0 && o.restInOneBlock(set)
		if !found || (one && !inBlock) || (one == inBlock && leaves < best) {
			best, found, inBlock = leaves, true, one
		}
	}
	return best, found
}

func (o *oracle) nodeOK(n *cluster.Node, now bool) bool {
	j := o.j
	var part *cluster.Partition
	for _, p := range o.s.Partitions {
		if p.Name == j.Partition {
			part = p
		}
	}
	feat, _ := cluster.ParseConstraint(j.Constraint)
	if part == nil || !part.Contains(n.Name) || !modelOK(strings.ToLower(j.GPUType), n) || !feat.Match(n.Features) || contains(j.Exclude, n.Name) {
		return false
	}
	gpus, cpus, mem := n.GPUs, n.CPUs, n.MemoryMB
	if now {
		if n.State != cluster.NodeUp {
			return false
		}
		for _, x := range o.s.Jobs {
			if !x.Live() {
				continue
			}
			for _, a := range x.Alloc.Nodes {
				if a.Node == n.Name {
					if j.Exclusive || x.Exclusive {
						return false
					}
					gpus, cpus, mem = gpus-len(a.GPUs), cpus-a.CPUs, mem-a.MemoryMB
				}
			}
		}
	}
	return gpus >= j.GPUsPerNode && cpus >= j.CPUsPerNode && mem >= j.MemoryMB
}

func (o *oracle) setOK(set []*cluster.Node, now bool) bool {
	j := o.j
	if len(set) != max(j.Nodes, 1) {
		return false
	}
	for _, want := range j.NodeList {
		if !containsNode(set, want) {
			return false
		}
	}
	if j.Segment > 0 {
		domain := o.s.Topology.LeafOf
		if len(o.s.Topology.Blocks()) > 0 {
			domain = o.s.Topology.BlockOf
		}
		per := map[string]int{}
		for _, n := range set {
			per[domain(n.Name)]++
		}
		for d, c := range per {
			if d == "" || c%j.Segment != 0 {
				return false
			}
		}
	}
	if feat, _ := cluster.ParseConstraint(j.Constraint); !hallCounts(set, feat.Counts) {
		return false
	}
	waiting := j.Switches > 0 && epoch.Before(j.SubmitTime.Add(switchWait(j)))
	return !now || !waiting || o.count(set, o.s.Topology.LeafOf) <= j.Switches
}

func switchWait(j *cluster.Job) time.Duration {
	if j.SwitchesWait > 0 {
		return j.SwitchesWait
	}
	return defaultSwitchWait
}

// restInOneBlock: the nodes not named by --nodelist lie in one block.
func (o *oracle) restInOneBlock(set []*cluster.Node) bool {
	block, rest := "", 0
	for _, n := range set {
		if contains(o.j.NodeList, n.Name) {
			continue
		}
		b := o.s.Topology.BlockOf(n.Name)
		if b == "" || (block != "" && b != block) {
			return false
		}
		block, rest = b, rest+1
	}
	return rest > 1
}

func (o *oracle) count(set []*cluster.Node, key func(string) string) int {
	seen := map[string]bool{}
	for _, n := range set {
		seen[key(n.Name)] = true
	}
	return len(seen)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsNode(set []*cluster.Node, name string) bool {
	for _, n := range set {
		if n.Name == name {
			return true
		}
	}
	return false
}

func nodeNamed(s *Snapshot, name string) *cluster.Node {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}
