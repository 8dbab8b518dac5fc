package scheduler

import "sort"

// Blocks (topology.conf BlockName= lines: NVLink domains, supernodes) add
// two rules on top of the leaf rules:
//
//   - a job with Segment=K is placed in groups of K nodes, each group inside
//     one block (inside one leaf switch when the topology has no blocks);
//     Nodes/K groups are taken from as few blocks as possible;
//   - a job without a segment that fits inside one block now is placed
//     inside one block; if none has room it is placed by the leaf rules
//     alone rather than wait.
//
// In both cases a block is chosen by the fewest leaves its share needs, then
// best fit (the fewest spare nodes), then order; inside it, the leaf rules
// pick the nodes.

// pickGang chooses the nodes for r among the groups: with node counts in
// the job's constraint, by pickCounted; otherwise by pickPlain.
func (f *fabric) pickGang(groups []group, cs *candSet, r *request) ([]int32, bool) {
	if len(cs.counts) > 0 {
		return f.pickCounted(groups, cs, r)
	}
	return f.pickPlain(groups, cs.required, r, cs.mixed)
}

// pickPlain chooses the nodes for r: the required ones (already checked to
// fit), then the rest from the groups, by the block and leaf rules, within
// r.maxLeaves.
func (f *fabric) pickPlain(groups []group, required []int32, r *request, mixed bool) ([]int32, bool) {
	need := r.nodes - len(required)
	var out []int32
	var ok bool
	switch {
	case need < 0:
		return nil, false
	case r.segment > 0:
		out, ok = f.pickDomains(f.domains(groups), need, r.segment, 0, mixed)
	case len(f.blocks) > 0 && need > 1:
		if out, ok = f.pickDomains(f.domains(groups), need, need, r.maxLeaves, mixed); !ok {
			out, ok = f.pickLeaves(groups, need, r.maxLeaves, mixed)
		}
	default:
		out, ok = f.pickLeaves(groups, need, r.maxLeaves, mixed)
	}
	if !ok {
		return nil, false
	}
	out = append(append([]int32(nil), required...), out...)
	if r.maxLeaves > 0 && f.leafSpan(out) > r.maxLeaves {
		return nil, false
	}
	return out, true
}

// domains regroups leaf groups by block, or returns them as they are when
// the topology has no blocks. Nodes outside every block are left out.
func (f *fabric) domains(groups []group) []group {
	if len(f.blocks) == 0 {
		return groups
	}
	var all []int32
	for _, g := range groups {
		all = append(all, g.nodes...)
	}
	sort.SliceStable(all, func(a, b int) bool { return f.nodes[all[a]].block < f.nodes[all[b]].block })
	var out []group
	for start := 0; start < len(all); {
		b := f.nodes[all[start]].block
		end := start
		for end < len(all) && f.nodes[all[end]].block == b {
			end++
		}
		if b >= 0 {
			out = append(out, group{leaf: b, nodes: all[start:end]})
		}
		start = end
	}
	return out
}

// pickDomains takes need nodes in units of unit nodes, each unit inside one
// domain, from as few domains as possible. With unit == need it only
// succeeds inside a single domain. A single domain is only chosen if its
// share fits on maxLeaves leaves (when positive).
func (f *fabric) pickDomains(doms []group, need, unit, maxLeaves int, mixed bool) ([]int32, bool) {
	units := need / unit
	best, bestLeaves := -1, 0
	for i := range doms {
		if len(doms[i].nodes)/unit < units {
			continue
		}
		l := f.leavesNeeded(doms[i].nodes, need)
		if maxLeaves > 0 && l > maxLeaves {
			continue
		}
		if best < 0 || l < bestLeaves || (l == bestLeaves && len(doms[i].nodes) < len(doms[best].nodes)) {
			best, bestLeaves = i, l
		}
	}
	if best >= 0 {
		return f.pickLeaves(f.byLeaf(doms[best].nodes), need, 0, mixed)
	}
	if unit == need {
		return nil, false
	}
	order := append([]group(nil), doms...)
	sort.SliceStable(order, func(a, b int) bool { return len(order[a].nodes)/unit > len(order[b].nodes)/unit })
	var out []int32
	for i := 0; i < len(order) && units > 0; i++ {
		have := len(order[i].nodes) / unit
		if have == 0 {
			break
		}
		if have >= units { // the remainder fits: add the fewest new leaves, then best fit
			j := f.remainderDomain(order[i:], units, unit, out)
			nodes, _ := f.pickLeaves(f.byLeaf(j.nodes), units*unit, 0, mixed)
			return append(out, nodes...), true
		}
		nodes, _ := f.pickLeaves(f.byLeaf(order[i].nodes), have*unit, 0, mixed)
		out = append(out, nodes...)
		units -= have
	}
	return out, units == 0
}

// byLeaf groups nodes by leaf, keeping their order inside each leaf.
func (f *fabric) byLeaf(nodes []int32) []group {
	sorted := append([]int32(nil), nodes...)
	sort.SliceStable(sorted, func(a, b int) bool { return f.nodes[sorted[a]].leaf < f.nodes[sorted[b]].leaf })
	var out []group
	for start := 0; start < len(sorted); {
		end := start
		for end < len(sorted) && f.nodes[sorted[end]].leaf == f.nodes[sorted[start]].leaf {
			end++
		}
		out = append(out, group{leaf: f.nodes[sorted[start]].leaf, nodes: sorted[start:end]})
		start = end
	}
	return out
}

// leavesNeeded is the fewest leaves among nodes that hold n of them.
func (f *fabric) leavesNeeded(nodes []int32, n int) int {
	groups := f.byLeaf(nodes)
	sort.Slice(groups, func(a, b int) bool { return len(groups[a].nodes) > len(groups[b].nodes) })
	m := 0
	for _, g := range groups {
		if n <= 0 {
			break
		}
		m, n = m+1, n-len(g.nodes)
	}
	return m
}

// remainderDomain picks, among domains that hold units more units, the one
// that adds the fewest leaves to those of the nodes already taken, then the
// one with the fewest units (best fit), then the first.
func (f *fabric) remainderDomain(doms []group, units, unit int, taken []int32) group {
	used := map[int32]bool{}
	for _, i := range taken {
		used[f.nodes[i].leaf] = true
	}
	best, bestNew := -1, 0
	for k := range doms {
		have := len(doms[k].nodes) / unit
		if have < units {
			continue
		}
		fresh := map[int32]bool{}
		for _, i := range doms[k].nodes {
			if l := f.nodes[i].leaf; !used[l] {
				fresh[l] = true
			}
		}
		if best < 0 || len(fresh) < bestNew || (len(fresh) == bestNew && have < len(doms[best].nodes)/unit) {
			best, bestNew = k, len(fresh)
		}
	}
	return doms[best]
}
