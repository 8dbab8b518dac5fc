package scheduler

import (
	"fmt"
	"slices"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Node counts in a constraint ("--constraint=gpu*2": at least two of the
// job's nodes have feature gpu; "[rack1*2&rack2*4]": two nodes with rack1
// and four other nodes with rack2). The other nodes need no feature, so a
// counted job's candidates are its partition's nodes (cluster.Constraint
// filters none), and every placement path (now, reserved, preempting, the
// idle check) goes through pickGang, which for such a job:
//
//  1. places the gang by the usual block and leaf rules, and keeps it when
//     the counts hold in it: the most compact answer, and usually one;
//  2. otherwise (and never for a segmented job), for each leaf in turn,
//     grows a pool of leaves from it until the pool holds the gang and its
//     counts, takes a matching of the counts in the pool and the rest of
//     the gang near it (countedAround), and keeps the gang of the fewest
//     leaves, within the job's leaf limit. Blocks are not sought in this
//     step.
//
// Whether counts hold in a set of nodes is a matching (countsHeld): a node
// counts for one feature at most. Feasible checks the counts against the
// partition's nodes that could hold the per-node request, in the same way.

// countsHeld reports whether the counts hold among nodes: a matching that
// gives each count its number of nodes with its feature, a node to one
// count at most.
func (f *fabric) countsHeld(nodes []int32, counts []cluster.FeatureCount) bool {
	return f.countedNodes(nodes, nil, 0, counts) != nil
}

// countedNodes is a matching of the counts over the nodes of must, and of
// at most spare of others besides (the --nodelist nodes are in the gang
// anyway, and spare is the room left beside them): its nodes, or nil when
// there is none. Nodes earlier in their list are tried first.
func (f *fabric) countedNodes(must, others []int32, spare int, counts []cluster.FeatureCount) []int32 {
	if len(counts) == 0 {
		return []int32{}
	}
	var rows []int32 // the nodes with a counted feature
	var has [][]bool
	var free []bool // a node of must
	for k, list := range [][]int32{must, others} {
		for _, i := range list {
			if k == 1 && slices.Contains(must, i) {
				continue
			}
			row := make([]bool, len(counts))
			any := false
			for c, fc := range counts {
				row[c] = f.hasFeature(i, fc.Feature)
				any = any || row[c]
			}
			if any {
				rows, has, free = append(rows, i), append(has, row), append(free, k == 0)
			}
		}
	}
	serves, ok := matchCounts(has, free, spare, counts)
	if !ok {
		return nil
	}
	out := []int32{}
	for k, c := range serves {
		if c >= 0 {
			out = append(out, rows[k])
		}
	}
	return out
}

// matchCounts finds a matching by augmenting paths (Kuhn): has[k][c] says
// that node k may serve count c; serves[k] is the count node k serves, or
// -1. It first matches what it can with free nodes alone, then goes on
// with every node: augmenting never unmatches a node, so the free nodes
// matched stay the most there can be, and the others used the fewest;
// those must be at most spare.
func matchCounts(has [][]bool, free []bool, spare int, counts []cluster.FeatureCount) (serves []int, ok bool) {
	serves = make([]int, len(has))
	for k := range serves {
		serves[k] = -1
	}
	seen := make([]bool, len(has))
	allFree := false
	var augment func(c int) bool
	augment = func(c int) bool {
		for k := range has {
			if !has[k][c] || seen[k] || !(allFree || free[k]) {
				continue
			}
			seen[k] = true
			if serves[k] < 0 || augment(serves[k]) {
				serves[k] = c
				return true
			}
		}
		return false
	}
	var unmatched []int // count slots, by count
	for c, fc := range counts {
		for range fc.Nodes {
			clear(seen)
			if !augment(c) {
				unmatched = append(unmatched, c)
			}
		}
	}
	if len(unmatched) > spare {
		return nil, false
	}
	allFree = true
	for _, c := range unmatched {
		clear(seen)
		if !augment(c) {
			return nil, false
		}
	}
	return serves, true
}

// pickCounted is pickGang for a job with node counts (see above).
func (f *fabric) pickCounted(groups []group, cs *candSet, r *request) ([]int32, bool) {
	if out, ok := f.pickPlain(groups, cs.required, r, cs.mixed); ok && f.countsHeld(out, cs.counts) {
		return out, true
	}
	if r.segment > 0 {
		return nil, false // segments decide the whole gang's shape
	}
	least := f.leastSpan(groups, cs, r)
	var best []int32
	for _, a := range f.anchors(groups, cs.counts) {
		out := f.countedAround(groups, a, cs, r)
		if out == nil {
			return nil, false // even every leaf together cannot: no other anchor can
		}
		if best == nil || f.leafSpan(out) < f.leafSpan(best) {
			best = out
		}
		if f.leafSpan(best) <= least {
			break // no gang spans fewer leaves
		}
	}
	if best == nil || (r.maxLeaves > 0 && f.leafSpan(best) > r.maxLeaves) {
		return nil, false
	}
	return best, true
}

// maxAnchors bounds the leaves a counted gang is built around, so that a
// pass's cost does not grow with the number of leaves.
const maxAnchors = 8

// anchors are the groups to build a counted gang around, at most
// maxAnchors: those with the most nodes of the counted features first,
// then the largest, then in order.
func (f *fabric) anchors(groups []group, counts []cluster.FeatureCount) []int {
	score := make([]int, len(groups))
	for g := range groups {
		for _, i := range groups[g].nodes {
			if slices.ContainsFunc(counts, func(fc cluster.FeatureCount) bool { return f.hasFeature(i, fc.Feature) }) {
				score[g]++
			}
		}
	}
	order := make([]int, len(groups))
	for g := range order {
		order[g] = g
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if score[a] != score[b] {
			return score[b] - score[a]
		}
		return len(groups[b].nodes) - len(groups[a].nodes)
	})
	return order[:min(len(order), maxAnchors)]
}

// leastSpan is a floor on the leaves any gang for r spans: the fewest
// leaves whose candidates hold it, and the leaves of its --nodelist nodes.
func (f *fabric) leastSpan(groups []group, cs *candSet, r *request) int {
	all := slices.Clone(cs.required)
	for _, g := range groups {
		all = append(all, g.nodes...)
	}
	return max(f.leavesNeeded(all, r.nodes), f.leafSpan(cs.required), 1)
}

// countedAround builds a counted gang around groups[anchor]: a pool of
// leaves, the anchor's and the required nodes' first, grows until it holds
// the gang and its counts (the leaf with the most nodes of the feature
// shortest in it next, else the largest); the counted nodes are a matching
// in the pool, nearest leaves first, and the rest is taken near them. It
// returns nil when even every leaf together cannot.
func (f *fabric) countedAround(groups []group, anchor int, cs *candSet, r *request) []int32 {
	pool := slices.Clone(cs.required)
	used := make([]bool, len(groups))
	add := func(g int) {
		used[g] = true
		pool = append(pool, groups[g].nodes...)
	}
	add(anchor)
	for g := range groups {
		if !used[g] && slices.ContainsFunc(cs.required, func(i int32) bool { return f.nodes[i].leaf == groups[g].leaf }) {
			add(g)
		}
	}
	for len(pool) < r.nodes || f.countedNodes(cs.required, pool, r.nodes-len(cs.required), cs.counts) == nil {
		short := f.shortestCount(pool, cs.counts)
		next, nextScore := -1, -1
		for g := range groups {
			if used[g] {
				continue
			}
			score := len(groups[g].nodes)
			if short != "" {
				score = 0
				for _, i := range groups[g].nodes {
					if f.hasFeature(i, short) {
						score++
					}
				}
			}
			if score > nextScore {
				next, nextScore = g, score
			}
		}
		if next < 0 {
			return nil
		}
		add(next)
	}
	spare := r.nodes - len(cs.required)
	counted := f.countedNodes(cs.required, pool, spare, cs.counts)
	if counted == nil {
		return nil
	}
	taken := slices.Clone(cs.required)
	for _, i := range counted {
		if !slices.Contains(taken, i) {
			taken = append(taken, i)
		}
	}
	inGang, near := map[int32]bool{}, map[int32]bool{}
	for _, i := range taken {
		inGang[i], near[f.nodes[i].leaf] = true, true
	}
	var rest []int32
	for _, i := range pool {
		if !inGang[i] {
			rest = append(rest, i)
		}
	}
	more, ok := f.pickNear(f.byLeaf(rest), r.nodes-len(taken), near, cs.mixed)
	if !ok {
		return nil
	}
	return sortedCopy(append(taken, more...))
}

// shortestCount is the feature of the count furthest from holding among
// nodes (by nodes with the feature, against its count), or "" when every
// count has enough nodes alone.
func (f *fabric) shortestCount(nodes []int32, counts []cluster.FeatureCount) string {
	worst, gap := "", 0
	for _, fc := range counts {
		n := 0
		for _, i := range nodes {
			if f.hasFeature(i, fc.Feature) {
				n++
			}
		}
		if fc.Nodes-n > gap {
			worst, gap = fc.Feature, fc.Nodes-n
		}
	}
	return worst
}

func sortedCopy(xs []int32) []int32 {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

// pickNear takes k nodes of the groups: on the leaves in near first (by
// the leaf rules among them), then the remainder by the leaf rules on the
// others, so that a gang built in parts spans few leaves.
func (f *fabric) pickNear(groups []group, k int, near map[int32]bool, mixed bool) ([]int32, bool) {
	var in, out []group
	n := 0
	for _, g := range groups {
		if near[g.leaf] {
			in = append(in, g)
			n += len(g.nodes)
		} else {
			out = append(out, g)
		}
	}
	if n >= k {
		return f.pickLeaves(in, k, 0, mixed)
	}
	var picked []int32
	for _, g := range in {
		picked = append(picked, g.nodes...)
	}
	more, ok := f.pickLeaves(out, k-n, 0, mixed)
	if !ok {
		return nil, false
	}
	return append(picked, more...), true
}

func (f *fabric) hasFeature(i int32, feature string) bool {
	return slices.Contains(f.nodes[i].node.Features, feature)
}

// countsNever explains why the counts can never hold among the nodes that
// could hold the per-node request (fit), or nil.
func (ca *catalog) countsNever(cs *candSet, r request, fit []int32) error {
	if len(cs.counts) == 0 {
		return nil
	}
	c := cluster.Constraint{Counts: cs.counts}
	if want := c.CountedNodes(); want > r.nodes {
		return fmt.Errorf("%w: --constraint=%s counts %s; the job asks for %s: ask for at least %d (-N)",
			cluster.ErrUnsatisfiable, cs.k.constraint, plural(want, "node"), plural(r.nodes, "node"), want)
	}
	if ca.countedNodes(cs.required, fit, r.nodes-len(cs.required), cs.counts) != nil {
		return nil
	}
	for _, fc := range cs.counts {
		n := 0
		for _, i := range fit {
			if ca.hasFeature(i, fc.Feature) {
				n++
			}
		}
		if n < fc.Nodes {
			return fmt.Errorf("%w: partition %s has %s with feature %q that can hold the job's per-node request; --constraint=%s asks for %d",
				cluster.ErrUnsatisfiable, cs.part.Name, plural(n, "node"), fc.Feature, cs.k.constraint, fc.Nodes)
		}
	}
	if len(cs.required) > 0 {
		return fmt.Errorf("%w: the --nodelist nodes leave too few others to meet --constraint=%s (a node counts for one feature only)",
			cluster.ErrUnsatisfiable, cs.k.constraint)
	}
	return fmt.Errorf("%w: partition %s has too few distinct nodes for --constraint=%s (a node counts for one feature only)",
		cluster.ErrUnsatisfiable, cs.part.Name, cs.k.constraint)
}
