package scheduler

import "sort"

// group is the nodes that can host a request under one leaf switch (or, in
// the block step, one block), in candidate order: weight, then name.
type group struct {
	leaf  int32
	nodes []int32
}

// pickLeaves chooses k nodes from the groups on as few leaves as possible
// (at most maxLeaves when positive):
//
//   - if one leaf holds them, the leaf whose best k nodes weigh least, then
//     the one with the fewest fitting nodes (best fit: big holes survive),
//     then the first;
//   - otherwise the fewest leaves m that hold k, taken under one spine when
//     some spine's m largest leaves hold k (the spine whose leaves fit
//     tightest); the largest leaves are filled and the remainder goes to
//     the smallest leaf that holds it.
//
// Inside a leaf, nodes go by weight, then fewest free GPUs, then name. The
// result is by leaf as chosen, then name.
func (f *fabric) pickLeaves(groups []group, k, maxLeaves int, mixed bool) ([]int32, bool) {
	if k <= 0 {
		return nil, true
	}
	best := -1
	for i := range groups {
		if len(groups[i].nodes) >= k && (best < 0 || f.leafBefore(&groups[i], &groups[best], k, mixed)) {
			best = i
		}
	}
	if best >= 0 {
		return f.bestNodes(groups[best].nodes, k), true
	}
	if maxLeaves == 1 {
		return nil, false
	}
	order := f.bySize(groups)
	m, sum := 0, 0
	for _, g := range order {
		if sum >= k {
			break
		}
		m, sum = m+1, sum+len(g.nodes)
	}
	if sum < k || (maxLeaves > 0 && m > maxLeaves) {
		return nil, false
	}
	order = f.oneSpine(order, k, m)
	var out []int32
	need := k
	for i := 0; need > 0; i++ {
		g := order[i]
		if len(g.nodes) >= need {
			for _, h := range order[i+1:] {
				if len(h.nodes) >= need && len(h.nodes) < len(g.nodes) {
					g = h // the smallest that still holds the remainder
				}
			}
			return append(out, f.bestNodes(g.nodes, need)...), true
		}
		out = append(out, f.bestNodes(g.nodes, len(g.nodes))...)
		need -= len(g.nodes)
	}
	return out, true
}

// leafBefore orders leaves that each hold k nodes.
func (f *fabric) leafBefore(a, b *group, k int, mixed bool) bool {
	if mixed {
		if wa, wb := f.weight(a.nodes[:k]), f.weight(b.nodes[:k]); wa != wb {
			return wa < wb
		}
	}
	if len(a.nodes) != len(b.nodes) {
		return len(a.nodes) < len(b.nodes)
	}
	return a.leaf < b.leaf
}

func (f *fabric) weight(nodes []int32) int {
	w := 0
	for _, i := range nodes {
		w += f.nodes[i].node.Weight
	}
	return w
}

// bySize returns the groups by size, largest first, then leaf order.
func (f *fabric) bySize(groups []group) []group {
	order := append(f.groupOrder[:0], groups...)
	sort.Slice(order, func(i, j int) bool {
		if len(order[i].nodes) != len(order[j].nodes) {
			return len(order[i].nodes) > len(order[j].nodes)
		}
		return order[i].leaf < order[j].leaf
	})
	f.groupOrder = order
	return order
}

// oneSpine keeps, of the groups sorted by size, those under the spine whose
// m largest leaves hold k with the least room to spare; all of them when no
// spine can.
func (f *fabric) oneSpine(order []group, k, m int) []group {
	if f.spines < 2 {
		return order
	}
	count := make([]int, f.spines)
	sum := make([]int, f.spines)
	for _, g := range order {
		s := f.leaves[g.leaf].spine
		if count[s] < m {
			count[s]++
			sum[s] += len(g.nodes)
		}
	}
	best := -1
	for s := range sum {
		if sum[s] >= k && (best < 0 || sum[s] < sum[best]) {
			best = s
		}
	}
	if best < 0 {
		return order
	}
	var kept []group
	for _, g := range order {
		if f.leaves[g.leaf].spine == int32(best) {
			kept = append(kept, g)
		}
	}
	return kept
}

// bestNodes takes n nodes of one group: lowest weight, then fewest free
// GPUs, then fewest free CPUs, then name; returned in name order.
func (f *fabric) bestNodes(nodes []int32, n int) []int32 {
	out := append([]int32(nil), nodes...)
	if n < len(out) {
		sort.SliceStable(out, func(a, b int) bool {
			x, y := &f.nodes[out[a]], &f.nodes[out[b]]
			if x.node.Weight != y.node.Weight {
				return x.node.Weight < y.node.Weight
			}
			if x.ngpu != y.ngpu {
				return x.ngpu < y.ngpu
			}
			return x.cpus < y.cpus
		})
		out = out[:n]
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// leafSpan counts the distinct leaves of a set of nodes.
func (f *fabric) leafSpan(nodes []int32) int {
	seen := map[int32]bool{}
	for _, i := range nodes {
		seen[f.nodes[i].leaf] = true
	}
	return len(seen)
}
