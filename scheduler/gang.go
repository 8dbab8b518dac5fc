package scheduler

import (
	"sort"

	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// leafGroup is the feasible nodes under one leaf switch, best fit first.
type leafGroup struct {
	leaf  string
	nodes []*nodeCap
}

// groupByLeaf groups nodes (given in name order) by leaf. Inside a group the
// nodes with the fewest free GPUs come first (best fit), then by name.
func groupByLeaf(nodes []*nodeCap) []*leafGroup {
	index := map[string]*leafGroup{}
	var groups []*leafGroup
	for _, c := range nodes {
		g := index[c.leaf]
		if g == nil {
			g = &leafGroup{leaf: c.leaf}
			index[c.leaf] = g
			groups = append(groups, g)
		}
		g.nodes = append(g.nodes, c)
	}
	for _, g := range groups {
		sort.SliceStable(g.nodes, func(i, j int) bool { return len(g.nodes[i].gpus) < len(g.nodes[j].gpus) })
	}
	return groups
}

// assemble picks n nodes from the feasible ones, spanning as few leaves as
// possible. With one leaf enough, it is the leaf with the fewest sufficient
// nodes; otherwise the largest leaves are filled and the remainder goes to
// the smallest leaf that holds it. Ties go to the lower leaf name. The
// result is in rank order: by leaf as chosen, then by node name.
func assemble(feasible []*nodeCap, n int) ([]*nodeCap, bool) {
	if len(feasible) < n {
		return nil, false
	}
	groups := groupByLeaf(feasible)
	sort.SliceStable(groups, func(i, j int) bool {
		if len(groups[i].nodes) != len(groups[j].nodes) {
			return len(groups[i].nodes) > len(groups[j].nodes)
		}
		return groups[i].leaf < groups[j].leaf
	})
	var out []*nodeCap
	need := n
	for i := 0; need > 0; i++ {
		g := groups[i]
		if len(g.nodes) >= need {
			g = bestFit(groups[i:], need)
			out = append(out, byName(g.nodes[:need])...)
			break
		}
		out = append(out, byName(g.nodes)...)
		need -= len(g.nodes)
	}
	return out, true
}

// bestFit returns the group with the fewest nodes that still has need;
// groups are sorted by size descending, then leaf name.
func bestFit(groups []*leafGroup, need int) *leafGroup {
	best := groups[0]
	for _, g := range groups[1:] {
		if len(g.nodes) < need {
			break
		}
		if len(g.nodes) < len(best.nodes) || (len(g.nodes) == len(best.nodes) && g.leaf < best.leaf) {
			best = g
		}
	}
	return best
}

func byName(nodes []*nodeCap) []*nodeCap {
	out := append([]*nodeCap(nil), nodes...)
	sort.Slice(out, func(i, j int) bool { return hostlist.Less(out[i].node.Name, out[j].node.Name) })
	return out
}

// leafSpan counts the distinct leaves of a gang.
func leafSpan(nodes []*nodeCap) int {
	seen := map[string]bool{}
	for _, c := range nodes {
		seen[c.leaf] = true
	}
	return len(seen)
}
