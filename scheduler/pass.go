package scheduler

import (
	"math"
	"math/bits"
	"sort"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// maxGPUs is the most GPUs per node the scheduler hands out: free GPUs are a
// uint64 bit mask. Indices from 64 up are never allocated.
const maxGPUs = 64

// forever is the end of a holding without a time limit.
const forever = int64(math.MaxInt64)

// nodeCap is one node's state during a pass. Free capacity is what is left
// once live jobs and this pass's placements are taken off.
type nodeCap struct {
	node  *cluster.Node
	leaf  int32
	block int32  // -1: in no block
	gpus  uint64 // free GPU indices, as bits
	ngpu  int32  // bits set in gpus
	cpus  int
	mem   int64
	up    bool // State UP: may be given to jobs
	excl  bool // an exclusive job holds it: nothing else fits
	busy  bool // some job holds part of it: an exclusive job cannot take it
	resv  bool // a reservation of this pass starts on it later
	// behind: a partition holding it has a job left waiting this pass; a
	// job placed on it now is backfill (Slurm's main scheduler would have
	// left the node alone for the rest of the pass).
	behind bool
	head   int32
	// The node's whole capacity, copied here so the timeline checks need
	// not follow the node pointer.
	allGPUs int32
	allCPUs int
	allMem  int64
}

// fits reports whether the free capacity covers the request now.
func (c *nodeCap) fits(r *request) bool {
	return c.up && !c.excl && int(c.ngpu) >= r.gpus && c.cpus >= r.cpus && c.mem >= r.mem && (!r.excl || !c.busy)
}

// wholeFits reports whether the node could hold the request if idle.
func (c *nodeCap) wholeFits(r *request) bool {
	return int(c.allGPUs) >= r.gpus && c.allCPUs >= r.cpus && c.allMem >= r.mem
}

// leafInfo is one leaf switch and a histogram of its UP, shareable nodes by
// free GPU count, to skip leaves that cannot host a request.
type leafInfo struct {
	name     string
	spine    int32
	hist     []int32
	version  uint32 // bumped whenever a node of the leaf changes; starts at 1
	reserved int    // nodes with a reservation
}

// anyFree reports whether some node of the leaf has at least g free GPUs.
func (l *leafInfo) anyFree(g int) bool {
	for _, n := range l.hist[min(g, len(l.hist)):] {
		if n > 0 {
			return true
		}
	}
	return false
}

// pass is the working state of one Schedule call: the queue's order,
// reservations and preemption; the fabric picks gangs' nodes, the catalog
// keeps the candidate sets and the timeline says when nodes are free.
type pass struct {
	s   *Snapshot
	now time.Time
	opt Options
	fabric
	catalog
	timeline
	ports masterPorts // MASTER_PORTs in use (ports.go)
	scratch
}

// timeline is the capacity held on each node over time (timeline.go): the
// uses of live jobs, of the pass's placements and of its reservations,
// linked per node from nodeCap.head. It answers whether and from when a
// node can hold a request; which nodes make a gang is the fabric's, and
// which job goes first the pass's.
type timeline struct {
	*fabric
	nowNs int64
	uses  []use
}

// catalog is a pass's partitions and the candidate sets it builds from
// them, one per distinct set of a job's static filters (setKey), with what
// each learns once per request shape: whether it can ever fit, which of
// its nodes are out of service (candidates.go, feasible.go).
type catalog struct {
	*fabric
	parts map[string]*partition
	sets  map[setKey]*candSet
}

// fabric is the cluster's shape as a pass sees it: the nodes in name order
// with what is free on them, their leaves, spines and blocks. Its methods
// choose a gang's nodes among candidates by the topology rules and node
// counts (gang.go, blocks.go, counts.go); the order of jobs, time and
// preemption are the pass's.
type fabric struct {
	nodes      []nodeCap        // in hostlist name order
	index      map[string]int32 // nodes by name
	leaves     []leafInfo
	spines     int
	blocks     []string
	groupOrder []group // bySize's buffer
}

// partition is a partition with its member nodes in name order.
type partition struct {
	*cluster.Partition
	members []int32
}

func newPass(s *Snapshot, now time.Time) *pass {
	p := &pass{s: s, now: now, opt: s.Options.withDefaults()}
	p.index = make(map[string]int32, len(s.Nodes))
	p.catalog = catalog{fabric: &p.fabric, parts: map[string]*partition{}, sets: map[setKey]*candSet{}}
	p.timeline = timeline{fabric: &p.fabric, nowNs: now.UnixNano()}
	p.blocked = map[string]bool{}
	p.addNodes(s.Nodes)
	p.addLive(s.Jobs)
	p.fillHistograms()
	for _, part := range s.Partitions {
		pp := &partition{Partition: part}
		for i := range p.nodes {
			if part.AllNodes || part.Contains(p.nodes[i].node.Name) {
				pp.members = append(pp.members, int32(i))
			}
		}
		p.parts[part.Name] = pp
	}
	return p
}

// addNodes indexes the nodes in name order, with their leaf and block.
func (p *pass) addNodes(nodes []*cluster.Node) {
	sorted := uniqueSorted(nodes)
	leafIdx, spineIdx, blockIdx := map[string]int32{}, map[string]int32{}, map[string]int32{}
	p.nodes = make([]nodeCap, len(sorted))
	lastLeaf, lastLi := "", int32(-1)
	for i, n := range sorted {
		leaf := p.s.Topology.LeafOf(n.Name)
		if leaf == "" {
			leaf = n.Leaf
		}
		li := lastLi
		if li < 0 || leaf != lastLeaf { // neighbours in name order mostly share a leaf
			li = p.leafIndex(leafIdx, spineIdx, leaf)
			lastLeaf, lastLi = leaf, li
		}
		bi := int32(-1)
		if b := p.s.Topology.BlockOf(n.Name); b != "" {
			var ok bool
			if bi, ok = blockIdx[b]; !ok {
				bi = int32(len(p.blocks))
				blockIdx[b] = bi
				p.blocks = append(p.blocks, b)
			}
		}
		g := min(n.GPUs, maxGPUs)
		p.nodes[i] = nodeCap{node: n, leaf: li, block: bi, gpus: mask(g), ngpu: int32(g),
			cpus: n.CPUs, mem: n.MemoryMB, up: n.State == cluster.NodeUp && !p.s.Unheard[n.Name], head: -1,
			allGPUs: int32(g), allCPUs: n.CPUs, allMem: n.MemoryMB}
		p.index[n.Name] = int32(i)
	}
	p.spines = len(spineIdx)
}

// leafIndex returns the index of the named leaf, adding it (and its spine)
// on first sight.
func (p *pass) leafIndex(leafIdx, spineIdx map[string]int32, leaf string) int32 {
	if li, ok := leafIdx[leaf]; ok {
		return li
	}
	li := int32(len(p.leaves))
	leafIdx[leaf] = li
	spine := p.s.Topology.Parent(leaf)
	si, ok := spineIdx[spine]
	if !ok {
		si = int32(len(spineIdx))
		spineIdx[spine] = si
	}
	p.leaves = append(p.leaves, leafInfo{name: leaf, spine: si, version: 1})
	return li
}

// uniqueSorted returns the nodes in hostlist name order, keeping the first
// of nodes sharing a name. Nodes usually arrive strictly in order already:
// then they are returned as they are, after one linear check (a strictly
// increasing list has no duplicates, and sorting it would not move
// anything).
func uniqueSorted(nodes []*cluster.Node) []*cluster.Node {
	if strictlySorted(nodes) {
		return nodes
	}
	sorted := make([]*cluster.Node, 0, len(nodes))
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if !seen[n.Name] {
			seen[n.Name] = true
			sorted = append(sorted, n)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return hostlist.Less(sorted[i].Name, sorted[j].Name) })
	return sorted
}

func strictlySorted(nodes []*cluster.Node) bool {
	for k := 1; k < len(nodes); k++ {
		a, b := nodes[k-1].Name, nodes[k].Name
		if !numberedInOrder(a, b) && !hostlist.Less(a, b) {
			return false
		}
	}
	return true
}

// numberedInOrder reports, cheaply, a common case of hostlist.Less(a, b):
// names of equal length that differ only inside a trailing run of at most
// 19 digits, a's digit being the smaller at the first difference (gpu0041
// before gpu0042). Both then split into the same prefix, an empty suffix
// and numbers of equal width, which compare as they are spelled. False
// means only that the case does not apply.
func numberedInOrder(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	d := 0
	for d < len(a) && a[d] == b[d] {
		d++
	}
	if d == len(a) || a[d] > b[d] {
		return false
	}
	for k := d; k < len(a); k++ {
		if !isDigit(a[k]) || !isDigit(b[k]) {
			return false
		}
	}
	start := d
	for start > 0 && isDigit(a[start-1]) {
		start--
	}
	return len(a)-start <= 19
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// nodeAfter returns the index of the named node, trying first the node
// after prev (allocations list their nodes in name order, mostly
// consecutive ones) before the index map.
func (p *pass) nodeAfter(prev int32, name string) (int32, bool) {
	if next := prev + 1; next > 0 && int(next) < len(p.nodes) && p.nodes[next].node.Name == name {
		return next, true
	}
	i, ok := p.index[name]
	return i, ok
}

func mask(g int) uint64 {
	if g >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(g) - 1
}

// addLive takes what live jobs hold off the free capacity and records until
// when they hold it.
func (p *pass) addLive(jobs []*cluster.Job) {
	held := 0
	for _, j := range jobs {
		if j.Live() {
			held += len(j.Alloc.Nodes)
		}
	}
	// Room for the live jobs' uses and as many again for this pass's
	// placements and reservations before append has to grow the slice.
	p.uses = make([]use, 0, 2*held+len(p.nodes))
	for _, j := range jobs {
		if !j.Live() {
			continue
		}
		end := p.liveEnd(j)
		prev := int32(-1)
		for _, a := range j.Alloc.Nodes {
			i, ok := p.nodeAfter(prev, a.Node)
			if !ok {
				continue
			}
			prev = i
			c := &p.nodes[i]
			for _, g := range a.GPUs {
				if g >= 0 && g < maxGPUs && c.gpus&(1<<uint(g)) != 0 {
					c.gpus &^= 1 << uint(g)
				}
			}
			c.ngpu = int32(bits.OnesCount64(c.gpus))
			c.cpus -= a.CPUs
			c.mem -= a.MemoryMB
			c.busy = true
			c.excl = c.excl || j.Exclusive
			p.addUse(i, use{from: math.MinInt64, to: end, gpus: len(a.GPUs), cpus: a.CPUs, mem: a.MemoryMB, excl: j.Exclusive, job: j.ID})
		}
	}
}

func (p *pass) fillHistograms() {
	most := 0
	for i := range p.nodes {
		most = max(most, min(p.nodes[i].node.GPUs, maxGPUs))
	}
	for i := range p.nodes {
		c := &p.nodes[i]
		l := &p.leaves[c.leaf]
		if l.hist == nil {
			l.hist = make([]int32, most+1)
		}
		if c.up && !c.excl {
			l.hist[c.ngpu]++
		}
	}
}

// liveEnd is when live job j's capacity frees, as far as the pass can
// tell: at the end of its time limit, or, once its attempt has ended and
// its tasks were told to stop, at the end of the grace they have before
// they are killed, if sooner. Never before now; forever without either.
func (p *pass) liveEnd(j *cluster.Job) int64 {
	end := forever
	if lim := p.limitOf(j); lim > 0 {
		end = j.StartTime.Add(lim).UnixNano()
	}
	grace := p.opt.KillGrace
	if j.State == cluster.JobPreempted {
		grace = p.preemptGrace(j)
	}
	if j.State != cluster.JobRunning && j.State != cluster.JobConfiguring && grace > 0 && !j.EndTime.IsZero() {
		end = min(end, j.EndTime.Add(grace).UnixNano())
	}
	return max(end, p.nowNs)
}

// preemptGrace is how long the tasks of job j have once it is preempted:
// the preemption grace; after a --signal, that grace is the signal's, and
// SIGTERM, KillGrace and SIGKILL follow it (the agent's terminate).
func (p *pass) preemptGrace(j *cluster.Job) time.Duration {
	if j.Signal.Signal != 0 && p.opt.PreemptGrace > 0 {
		return p.opt.PreemptGrace + p.opt.KillGrace
	}
	return p.opt.PreemptGrace
}

// limitOf is the job's time limit: its own, else its partition's default,
// else the partition's maximum; 0 means unlimited.
func (p *pass) limitOf(j *cluster.Job) time.Duration {
	if j.TimeLimit > 0 {
		return j.TimeLimit
	}
	for _, part := range p.s.Partitions {
		if part.Name == j.Partition {
			if part.DefaultTime > 0 {
				return part.DefaultTime
			}
			return part.MaxTime
		}
	}
	return 0
}

// take gives the request's resources on node i to a job ending at end and
// returns what was taken (lowest free GPU indices first). An exclusive job
// takes every GPU and CPU of the node, as Slurm allocates it all CPUs and
// GRES of its nodes (memory stays what it asked).
func (p *pass) take(i int32, r *request, end int64) cluster.NodeAlloc {
	c := &p.nodes[i]
	gpus, cpus := r.gpus, r.cpus
	if r.excl {
		gpus, cpus = int(c.ngpu), max(c.cpus, r.cpus)
	}
	a := cluster.NodeAlloc{Node: c.node.Name, CPUs: cpus, MemoryMB: r.mem}
	if gpus > 0 {
		a.GPUs = make([]int, 0, gpus)
	}
	for len(a.GPUs) < gpus {
		g := bits.TrailingZeros64(c.gpus)
		c.gpus &^= 1 << uint(g)
		a.GPUs = append(a.GPUs, g)
	}
	p.leaves[c.leaf].version++
	h := p.leaves[c.leaf].hist
	h[c.ngpu]--
	c.ngpu -= int32(gpus)
	c.cpus -= cpus
	c.mem -= r.mem
	c.busy = true
	c.excl = c.excl || r.excl
	if !c.excl {
		h[c.ngpu]++
	}
	p.addUse(i, use{from: math.MinInt64, to: end, gpus: gpus, cpus: cpus, mem: r.mem, excl: r.excl})
	return a
}
