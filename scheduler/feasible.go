package scheduler

import (
	"fmt"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// Feasible reports whether the job could ever run: whether its partition's
// registered nodes, whatever their state and whatever runs on them, include
// Nodes nodes that have the requested GPU model, features (--constraint),
// GPUs, CPUs and memory, are not excluded, include the --nodelist nodes, and
// can be grouped as --segment asks. It returns an error wrapping
// cluster.ErrNotFound for an unknown partition, cluster.ErrInvalid for a
// malformed request (a bad constraint, a node count that is not a multiple
// of the segment) and cluster.ErrUnsatisfiable, with the limiting
// requirement, otherwise.
func Feasible(s *Snapshot, j *cluster.Job) error {
	if alts := alternatives(j); alts != nil {
		return feasibleAny(s, alts)
	}
	p := newPass(&Snapshot{Nodes: s.Nodes, Partitions: s.Partitions, Topology: s.Topology, Options: s.Options}, time.Time{})
	cs := p.set(j)
	if cs.bad != nil {
		return cs.bad
	}
	return p.neverFits(cs, requestOf(j))
}

// FeasibleKey is what Feasible's answer depends on in a job: two jobs with
// equal keys get the same answer on the same nodes, partitions and
// topology, so a caller may remember answers by key.
func FeasibleKey(j *cluster.Job) string {
	k, r := keyOf(j), requestOf(j)
	return fmt.Sprintf("%q %q %q %q %q %q %d %d %d %d %t %d",
		k.part, k.gpuType, k.constraint, k.nodelist, k.exclude, k.faults, r.nodes, r.gpus, r.cpus, r.mem, r.excl, r.segment)
}

// stage is one requirement in the order Feasible reports them.
type stage struct {
	ok   func(*cluster.Node) bool
	have func(count int, nodes []*cluster.Node) string // what the partition has
	want string                                        // what the job asks, per node
}

// neverFits reports, once per request shape, why the request can never fit
// the candidate set, or nil.
func (ca *catalog) neverFits(cs *candSet, r request) error {
	r.maxLeaves = 0
	err, ok := cs.never[r]
	if !ok {
		err = ca.whyNever(cs, r)
		cs.never[r] = err
	}
	return err
}

// whyNever applies the requirements one by one to the partition's nodes and
// reports the first that leaves fewer than the requested node count, then
// checks the --nodelist nodes and the segments.
func (ca *catalog) whyNever(cs *candSet, r request) error {
	fit := make([]int32, 0, len(cs.static))
	for _, i := range cs.static {
		if ca.nodes[i].wholeFits(&r) {
			fit = append(fit, i)
		}
	}
	if r.segment == 0 && len(cs.required) == 0 && len(fit) >= r.nodes {
		return ca.countsNever(cs, r, fit) // the usual case, without building messages
	}
	if r.segment > 0 {
		if r.nodes%r.segment != 0 {
			return fmt.Errorf("%w: --segment=%d does not divide the node count %d", cluster.ErrInvalid, r.segment, r.nodes)
		}
		if len(cs.required) > 0 {
			return fmt.Errorf("%w: --segment cannot be combined with --nodelist", cluster.ErrInvalid)
		}
		if len(cs.counts) > 0 {
			return fmt.Errorf("%w: --segment cannot be combined with node counts in --constraint (%s)", cluster.ErrInvalid, cs.k.constraint)
		}
	}
	nodes := make([]*cluster.Node, len(cs.part.members))
	for i, m := range cs.part.members {
		nodes[i] = ca.nodes[m].node
	}
	if len(nodes) < r.nodes {
		return fmt.Errorf("%w: partition %s has %s; the job asks for %s",
			cluster.ErrUnsatisfiable, cs.part.Name, plural(len(nodes), "node"), plural(r.nodes, "node"))
	}
	inSet := make(map[*cluster.Node]bool, len(cs.static))
	for _, i := range cs.static {
		inSet[ca.nodes[i].node] = true
	}
	for _, st := range stages(r, cs, inSet) {
		kept := keep(nodes, st.ok)
		if len(kept) < r.nodes {
			return fmt.Errorf("%w: partition %s has %s; the job asks for %s with %s each",
				cluster.ErrUnsatisfiable, cs.part.Name, st.have(len(nodes), nodes), plural(r.nodes, "node"), st.want)
		}
		nodes = kept
	}
	for _, i := range cs.required {
		if !ca.nodes[i].wholeFits(&r) {
			return fmt.Errorf("%w: --nodelist node %s is too small for the per-node request", cluster.ErrUnsatisfiable, ca.nodes[i].node.Name)
		}
	}
	if err := ca.segmentsNever(nodes, r); err != nil {
		return err
	}
	return ca.countsNever(cs, r, fit)
}

// segmentsNever checks that enough groups of r.segment nodes fit inside
// blocks (leaves without blocks) among the nodes that pass every stage.
func (ca *catalog) segmentsNever(nodes []*cluster.Node, r request) error {
	if r.segment <= 0 {
		return nil
	}
	count := map[int32]int{}
	for _, n := range nodes {
		c := &ca.nodes[ca.index[n.Name]]
		d := c.leaf
		if len(ca.blocks) > 0 {
			d = c.block
		}
		if d >= 0 {
			count[d]++
		}
	}
	groups := 0
	for _, c := range count {
		groups += c / r.segment
	}
	if groups < r.nodes/r.segment {
		where := "leaf switch"
		if len(ca.blocks) > 0 {
			where = "block"
		}
		return fmt.Errorf("%w: only %d groups of %d nodes fit inside one %s each; the job asks for %d",
			cluster.ErrUnsatisfiable, groups, r.segment, where, r.nodes/r.segment)
	}
	return nil
}

func stages(r request, cs *candSet, inSet map[*cluster.Node]bool) []stage {
	var out []stage
	if k := cs.key(); k.gpuType != "" {
		model := func(n *cluster.Node) bool { return modelOK(k.gpuType, n) }
		out = append(out, stage{
			ok: model,
			have: func(n int, nodes []*cluster.Node) string {
				return fmt.Sprintf("%s, %d of them with GPU model %q", plural(n, "node"), len(keep(nodes, model)), k.gpuType)
			},
			want: fmt.Sprintf("GPU model %q", k.gpuType),
		})
	}
	if k := cs.key(); k.constraint != "" || k.exclude != "" || k.faults != "" {
		filters := fmt.Sprintf("features %q", k.constraint)
		if k.constraint == "" {
			filters = "nodes not excluded"
		}
		out = append(out, stage{
			ok: func(n *cluster.Node) bool { return inSet[n] },
			have: func(n int, nodes []*cluster.Node) string {
				return fmt.Sprintf("%s, %d of them usable with the job's --constraint and --exclude", plural(n, "node"), len(keep(nodes, func(n *cluster.Node) bool { return inSet[n] })))
			},
			want: filters,
		})
	}
	out = append(out,
		limit(r.gpus > 0, "GPU", "GPUs", int64(r.gpus), func(n *cluster.Node) int64 { return int64(n.GPUs) }),
		limit(r.cpus > 0, "CPU", "CPUs", int64(r.cpus), func(n *cluster.Node) int64 { return int64(n.CPUs) }),
		limit(r.mem > 0, "MB of memory", "MB of memory", r.mem, func(n *cluster.Node) int64 { return n.MemoryMB }))
	return out
}

// limit is a stage for a countable per-node resource; when the job does not
// ask for it, every node passes. one and many name one unit and several.
func limit(asked bool, one, many string, want int64, has func(*cluster.Node) int64) stage {
	unit := func(n int64) string {
		if n == 1 {
			return one
		}
		return many
	}
	return stage{
		ok: func(n *cluster.Node) bool { return !asked || has(n) >= want },
		have: func(count int, nodes []*cluster.Node) string {
			most := int64(0)
			for _, n := range nodes {
				most = max(most, has(n))
			}
			enough := len(keep(nodes, func(n *cluster.Node) bool { return has(n) >= want }))
			if enough == 0 {
				return fmt.Sprintf("%s with at most %d %s", plural(count, "node"), most, unit(most))
			}
			return fmt.Sprintf("only %s with %d or more %s", plural(enough, "node"), want, many)
		},
		want: fmt.Sprintf("%d %s", want, unit(want)),
	}
}

func keep(nodes []*cluster.Node, ok func(*cluster.Node) bool) []*cluster.Node {
	var out []*cluster.Node
	for _, n := range nodes {
		if ok(n) {
			out = append(out, n)
		}
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// nodeNotAvail names, as a hostlist, the nodes out of service (DOWN,
// DRAIN, silent) that a job waiting with cluster.ReasonNodeAvail would
// fit its candidates with: its --nodelist nodes out of service if any,
// else every candidate out of service that could hold its share. Once per
// request shape.
func (ca *catalog) nodeNotAvail(cs *candSet, r request) string {
	r.maxLeaves = 0
	if names, ok := cs.notAvail[r]; ok {
		return names
	}
	names := hostlist.Compress(ca.whichNotAvail(cs, r))
	cs.notAvail[r] = names
	return names
}

func (ca *catalog) whichNotAvail(cs *candSet, r request) []string {
	var names []string
	for _, list := range [][]int32{cs.required, cs.static} {
		for _, i := range list {
			if n := &ca.nodes[i]; !n.up && n.wholeFits(&r) {
				names = append(names, n.node.Name)
			}
		}
		if len(names) > 0 {
			break
		}
	}
	return names
}

// idleFits reports, once per request shape, whether the gang would fit the
// UP candidates if nothing ran on them.
func (ca *catalog) idleFits(cs *candSet, r request) bool {
	r.maxLeaves = 0
	if ok, done := cs.idle[r]; done {
		return ok
	}
	var groups []group
	for _, cl := range cs.leaves {
		g := group{leaf: cl.leaf}
		for _, i := range cl.nodes {
			if ca.nodes[i].wholeFits(&r) {
				g.nodes = append(g.nodes, i)
			}
		}
		if len(g.nodes) > 0 {
			groups = append(groups, g)
		}
	}
	ok := true
	for _, i := range cs.required {
		ok = ok && ca.nodes[i].up && ca.nodes[i].wholeFits(&r)
	}
	if ok {
		_, ok = ca.pickGang(groups, cs, &r)
	}
	cs.idle[r] = ok
	return ok
}
