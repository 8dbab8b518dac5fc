package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// request is the shape a job asks for: Nodes nodes each with the per-node
// resources, and its topology limits at the time of the question.
type request struct {
	nodes     int
	gpus      int
	cpus      int
	mem       int64
	excl      bool
	segment   int // groups of this many nodes, each inside one block; 0: none
	maxLeaves int // at most this many leaf switches; 0: any
}

func requestOf(j *cluster.Job) request {
	return request{
		nodes:   max(j.Nodes, 1),
		gpus:    max(j.GPUsPerNode, 0),
		cpus:    max(j.CPUsPerNode, 0),
		mem:     max(j.MemoryMB, 0),
		excl:    j.Exclusive,
		segment: max(j.Segment, 0),
	}
}

// setKey names the static filters of a job: nodes that pass them are its
// candidates whatever their load. Jobs with equal keys share one candSet.
type setKey struct {
	part, gpuType, constraint, nodelist, exclude string
	// faults are the nodes the job's earlier attempts found at fault, left
	// out as --exclude's are ("" in the set of a job that cannot do
	// without them: see pass.set).
	faults string
}

func keyOf(j *cluster.Job) setKey {
	return setKey{part: j.Partition, gpuType: strings.ToLower(j.GPUType), constraint: j.Constraint,
		nodelist: strings.Join(j.NodeList, ","), exclude: strings.Join(j.Exclude, ","), faults: strings.Join(j.FaultNodes(), ",")}
}

// candSet is the candidates for one setKey, built once per pass: the
// partition's nodes with the GPU model, the features, and not excluded.
type candSet struct {
	k        setKey
	part     *partition
	bad      error                  // the filters themselves can never be met
	static   []int32                // candidates in any state, name order
	leaves   []candLeaf             // UP candidates by leaf (leaf order), required ones left out
	required []int32                // --nodelist nodes, name order
	counts   []cluster.FeatureCount // node counts of the constraint (counts.go)
	mixed    bool                   // node weights differ: weight sums decide between leaves
	never    map[request]error
	idle     map[request]bool
	notAvail map[request]string // nodeNotAvail's answers
	failed   map[failKey][]failure
	fits     map[fitShape]*fitCache
	// noPreempt remembers shapes and classes that found no victims.
	noPreempt map[preemptKey]bool
}

func (cs *candSet) key() setKey { return cs.k }

// candLeaf is a leaf's UP candidates by weight, then name.
type candLeaf struct {
	leaf  int32
	nodes []int32
}

// set returns the job's candidate set, building it on first use. It
// leaves out the nodes the job's earlier attempts found at fault while the
// job could run without them. A job that could not gives its oldest fault
// node another chance first, then the next, down to none: one that needs
// every node of its partition keeps them all as candidates and waits for
// them to be back in service rather than never running again.
func (ca *catalog) set(j *cluster.Job) *candSet {
	k := keyOf(j)
	faults := j.FaultNodes() // oldest first
	for {
		cs := ca.setOf(j, k)
		if k.faults == "" || cs.bad == nil && ca.neverFits(cs, requestOf(j)) == nil {
			return cs
		}
		faults = faults[1:]
		k.faults = strings.Join(faults, ",")
	}
}

func (ca *catalog) setOf(j *cluster.Job, k setKey) *candSet {
	if cs := ca.sets[k]; cs != nil {
		return cs
	}
	cs := ca.buildSet(j, k)
	ca.sets[k] = cs
	return cs
}

func (ca *catalog) buildSet(j *cluster.Job, k setKey) *candSet {
	cs := &candSet{k: k, part: ca.parts[k.part], never: map[request]error{}, idle: map[request]bool{}, notAvail: map[request]string{}, failed: map[failKey][]failure{}, fits: map[fitShape]*fitCache{}, noPreempt: map[preemptKey]bool{}}
	if cs.part == nil {
		cs.bad = fmt.Errorf("partition %q: %w", k.part, cluster.ErrNotFound)
		return cs
	}
	feat, err := cluster.ParseConstraint(j.Constraint)
	if err != nil {
		cs.bad = err
		return cs
	}
	excluded := map[string]bool{} // --exclude, and the nodes at fault the set avoids
	for _, list := range []string{k.exclude, k.faults} {
		for n := range strings.SplitSeq(list, ",") {
			if n != "" {
				excluded[n] = true
			}
		}
	}
	isCand := func(n *cluster.Node) bool {
		return modelOK(k.gpuType, n) && feat.Match(n.Features) && !excluded[n.Name]
	}
	cs.static = make([]int32, 0, len(cs.part.members))
	for _, i := range cs.part.members {
		if isCand(ca.nodes[i].node) {
			cs.static = append(cs.static, i)
		}
	}
	if cs.bad = ca.staticError(cs, j, feat, excluded); cs.bad != nil {
		return cs
	}
	cs.required = ca.requiredOf(j.NodeList)
	cs.counts = feat.Counts
	ca.groupCandidates(cs)
	return cs
}

// staticError explains filters that leave no way to run: an unknown
// feature, everything excluded, a --nodelist node outside the candidates.
func (ca *catalog) staticError(cs *candSet, j *cluster.Job, feat cluster.Constraint, excluded map[string]bool) error {
	if len(feat.Terms) > 0 || len(feat.Counts) > 0 {
		members := make([]*cluster.Node, len(cs.part.members))
		for k, i := range cs.part.members {
			members[k] = ca.nodes[i].node
		}
		if f := unknownFeature(feat, members); f != "" {
			return fmt.Errorf("%w: no node of partition %s has feature %q", cluster.ErrUnsatisfiable, cs.part.Name, f)
		}
	}
	if len(cs.part.members) > 0 && len(cs.static) == 0 && len(excluded) > 0 {
		return fmt.Errorf("%w: --exclude leaves no node of partition %s", cluster.ErrUnsatisfiable, cs.part.Name)
	}
	for _, name := range j.NodeList {
		i, ok := ca.index[name]
		if _, in := slices.BinarySearch(cs.static, i); !ok || !in { // static is ascending
			return fmt.Errorf("%w: --nodelist node %s is not a node of partition %s that matches the job's constraints (phx sinfo -N -p %s lists them)",
				cluster.ErrUnsatisfiable, name, cs.part.Name, cs.part.Name)
		}
	}
	if len(j.NodeList) > max(j.Nodes, 1) {
		return fmt.Errorf("%w: --nodelist names %d nodes; the job asks for %s",
			cluster.ErrUnsatisfiable, len(j.NodeList), plural(max(j.Nodes, 1), "node"))
	}
	return nil
}

func (ca *catalog) requiredOf(names []string) []int32 {
	var out []int32
	seen := map[int32]bool{}
	for _, n := range names {
		if i, ok := ca.index[n]; ok && !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// groupCandidates fills cs.leaves with the UP, not required candidates.
func (ca *catalog) groupCandidates(cs *candSet) {
	pos := make([]int32, len(ca.leaves)) // index in cs.leaves plus one; 0: none yet
	weight := 0
	for n, i := range cs.static {
		c := &ca.nodes[i]
		if n == 0 {
			weight = c.node.Weight
		}
		cs.mixed = cs.mixed || c.node.Weight != weight
		if _, req := slices.BinarySearch(cs.required, i); !c.up || req { // required is sorted
			continue
		}
		k := int(pos[c.leaf]) - 1
		if k < 0 {
			k = len(cs.leaves)
			pos[c.leaf] = int32(k + 1)
			cs.leaves = append(cs.leaves, candLeaf{leaf: c.leaf})
		}
		cs.leaves[k].nodes = append(cs.leaves[k].nodes, i)
	}
	sort.Slice(cs.leaves, func(a, b int) bool { return cs.leaves[a].leaf < cs.leaves[b].leaf })
	if cs.mixed {
		for _, cl := range cs.leaves {
			sort.SliceStable(cl.nodes, func(a, b int) bool {
				return ca.nodes[cl.nodes[a]].node.Weight < ca.nodes[cl.nodes[b]].node.Weight
			})
		}
	}
}

// modelOK reports whether the node has the GPU model asked: a
// case-insensitive substring of Node.GPUModel (want is lower case).
func modelOK(want string, n *cluster.Node) bool {
	return want == "" || strings.Contains(strings.ToLower(n.GPUModel), want)
}

// schedulable reports whether a partition starts jobs: UP, or DRAIN (which,
// as in Slurm, refuses new submissions but still runs queued jobs).
func schedulable(p *cluster.Partition) bool {
	return p.State == cluster.PartitionUp || p.State == cluster.PartitionDrain
}
