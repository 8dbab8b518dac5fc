package scheduler

import (
	"math"
	"sort"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Preemption (requeue mode). A pending job that can neither start nor
// backfill may preempt running jobs of a strictly lower class: class is
// (partition PriorityTier, QoS level), compared in that order, so a job never
// preempts one of its own class or above and preemption cannot cycle.
// Victims must be RUNNING or CONFIGURING in a partition with PreemptMode
// REQUEUE and not already in Snapshot.Preempting. Jobs already leaving (in
// Preempting, or live in another state) free their resources at no cost,
// except those leaving for another pending job (claims.go), which only that
// job counts.
//
// The preemptor gets the placement with the fewest leaves, then the least
// work lost (GPUs held × time run so far, summed over the victims); it is
// not placed in this pass: the controller signals the victims, requeues them
// after their grace period, and a later pass places it. The free capacity of
// the chosen nodes is held for it for the rest of this pass.

// class orders jobs for preemption.
type class struct{ tier, qos int }

func (a class) below(b class) bool {
	return a.tier < b.tier || (a.tier == b.tier && a.qos < b.qos)
}

// liveJob is a running job as preemption sees it.
type liveJob struct {
	job         *cluster.Job
	class       class
	cost        int64 // GPU-seconds run so far
	leaving     bool  // already on its way out
	preemptible bool
	// claimedBy: the job this one's resources go to, chosen as a victim
	// in this pass or leaving for a pending job (claims.go); 0: none.
	claimedBy cluster.JobID
}

// asker is the job that wants nodes freed, and its class: it may remove
// the live jobs of a lower class that may be preempted, those leaving, and
// those claimed for it.
type asker struct {
	id cluster.JobID
	me class
}

// nobody is a class below every other: an asker of this class removes
// only jobs already leaving.
var nobody = class{tier: math.MinInt, qos: math.MinInt}

// holder is one live job's share of one node.
type holder struct {
	live int // index in pass.live
	gpus int
	cpus int
	mem  int64
}

// indexLive builds, on first use, the live jobs and their shares per node.
func (p *pass) indexLive() {
	if p.onNode != nil {
		return
	}
	p.onNode = make([][]holder, len(p.nodes)) // non-nil even when empty
	for _, j := range p.s.Jobs {
		if !j.Live() {
			continue
		}
		part := p.parts[j.Partition]
		lj := liveJob{job: j, class: class{qos: j.QoS.Level()},
			leaving: (j.State != cluster.JobRunning && j.State != cluster.JobConfiguring) || p.s.Preempting[j.ID]}
		gpus := 0
		for _, a := range j.Alloc.Nodes {
			gpus += len(a.GPUs)
		}
		if part != nil {
			lj.class.tier = part.PriorityTier
			lj.preemptible = part.PreemptMode.Requeues()
		}
		lj.cost = int64(max(gpus, 1)) * max(int64(p.now.Sub(j.StartTime).Seconds()), 1)
		prev := int32(-1)
		for _, a := range j.Alloc.Nodes {
			if i, ok := p.nodeAfter(prev, a.Node); ok {
				prev = i
				p.onNode[i] = append(p.onNode[i], holder{live: len(p.live), gpus: len(a.GPUs), cpus: a.CPUs, mem: a.MemoryMB})
			}
		}
		p.live = append(p.live, lj)
		if lj.preemptible && !lj.leaving && (p.lowest == nil || lj.class.below(*p.lowest)) {
			p.lowest = &lj.class
		}
	}
}

// preempt tries to free a placement for j by preempting lower-class jobs
// or by waiting for jobs already leaving; it reports whether it found one
// (and then emitted the preemptions it needs, possibly none, and claimed
// the victims and the free capacity of the nodes for j). j runs until end
// (its time limit from now): a node that a reservation of this pass needs
// before then is no use to it, freed or not (resvFits).
func (p *pass) preempt(plan *Plan, j *cluster.Job, cs *candSet, r *request, end int64) (start int64, nodes []int32, ok bool) {
	p.indexLive()
	me := class{tier: cs.part.PriorityTier, qos: j.QoS.Level()}
	if !p.hasVictimBelow(me) {
		return 0, nil, false
	}
	key := preemptKey{r: *r, me: me, end: end}
	if cs.noPreempt[key] {
		return 0, nil, false
	}
	start, nodes, ok = p.tryPreempt(plan, j, cs, r, me, end)
	if !ok {
		cs.noPreempt[key] = true // victims only get scarcer in a pass
	}
	return start, nodes, ok
}

// preemptKey is a request shape, class and end that found no victims.
type preemptKey struct {
	r   request
	me  class
	end int64
}

// hasVictimBelow reports whether some preemptible job (claimed or not) is
// of a lower class than me: the lowest class is found once per pass.
func (p *pass) hasVictimBelow(me class) bool {
	return p.lowest != nil && p.lowest.below(me)
}

func (p *pass) tryPreempt(plan *Plan, j *cluster.Job, cs *candSet, r *request, me class, end int64) (int64, []int32, bool) {
	nodes, victims, ok := p.victimGang(cs, r, asker{id: j.ID, me: me}, end, nil)
	if !ok {
		return 0, nil, false
	}
	for _, v := range victims {
		if !p.live[v].leaving {
			plan.Preemptions = append(plan.Preemptions, Preemption{Victim: p.live[v].job.ID, For: j.ID})
		}
	}
	return p.hold(j, nodes, victims), nodes, true
}

// victimGang finds the gang of cs's candidates (only those in only, when
// not nil) that removing live jobs can free for a, the cheapest as
// cheapestGang counts, and the live jobs to remove, by job ID.
func (p *pass) victimGang(cs *candSet, r *request, a asker, end int64, only []bool) ([]int32, []int, bool) {
	costs := map[int32]int64{}
	var groups []group
	for _, cl := range cs.leaves {
		g := group{leaf: cl.leaf}
		for _, i := range cl.nodes {
			if only != nil && !only[i] {
				continue
			}
			if cost, _, ok := p.freeing(i, r, a, nil, end); ok {
				costs[i] = cost
				g.nodes = append(g.nodes, i)
			}
		}
		if len(g.nodes) > 0 {
			sort.SliceStable(g.nodes, func(a, b int) bool { return costs[g.nodes[a]] < costs[g.nodes[b]] })
			groups = append(groups, g)
		}
	}
	for _, i := range cs.required { // --nodelist nodes: in the gang, not in the groups
		if only != nil && !only[i] {
			continue
		}
		if cost, _, ok := p.freeing(i, r, a, nil, end); ok && p.nodes[i].up {
			costs[i] = cost
		}
	}
	nodes, ok := p.cheapestGang(groups, costs, cs, r)
	if !ok {
		return nil, nil, false
	}
	chosen := map[int]bool{}
	var victims []int
	for _, i := range nodes {
		_, need, _ := p.freeing(i, r, a, chosen, end)
		for _, v := range need {
			if !chosen[v] {
				chosen[v] = true
				victims = append(victims, v)
			}
		}
	}
	sort.Slice(victims, func(a, b int) bool { return p.live[victims[a]].job.ID < p.live[victims[b]].job.ID })
	return nodes, victims, true
}

// hold gives j the victims and the nodes: it starts there once the last
// victim has left, the instant hold returns, and holds them whole until
// its time limit from then: what is free on them now, and what each victim
// frees when it has left.
func (p *pass) hold(j *cluster.Job, nodes []int32, victims []int) int64 {
	start := p.nowNs
	for _, v := range victims {
		p.live[v].claimedBy = j.ID
		leave := p.leaveAt(v)
		start = max(start, leave)
		p.endUses(p.live[v].job, leave)
	}
	end := endOf(start, p.limitOf(j))
	for _, i := range nodes {
		c := &p.nodes[i]
		p.take(i, &request{gpus: int(c.ngpu), cpus: max(c.cpus, 0), mem: max(c.mem, 0)}, end)
		for _, v := range victims {
			for _, a := range p.live[v].job.Alloc.Nodes {
				if a.Node == c.node.Name {
					p.addUse(i, use{from: p.leaveAt(v), to: end, gpus: len(a.GPUs), cpus: a.CPUs, mem: a.MemoryMB})
				}
			}
		}
	}
	return start
}

// leaveAt is when victim v's capacity frees: a victim this pass signals
// has its preemption grace from now (preemptGrace); one already leaving,
// until its end (liveEnd). Without a grace in the options, now.
func (p *pass) leaveAt(v int) int64 {
	lj := &p.live[v]
	switch {
	case p.opt.PreemptGrace <= 0:
		return p.nowNs
	case !lj.leaving:
		return min(p.nowNs+int64(p.preemptGrace(lj.job)), p.liveEnd(lj.job))
	}
	return p.liveEnd(lj.job)
}

// cheapestGang picks the gang among nodes that preemption can free: by the
// block and leaf rules for segments, --nodelist and node counts, otherwise
// on the fewest leaves and, among leaf sets of that size, the least cost.
func (p *pass) cheapestGang(groups []group, costs map[int32]int64, cs *candSet, r *request) ([]int32, bool) {
	if r.segment > 0 || len(cs.required) > 0 || len(cs.counts) > 0 || len(p.blocks) > 0 {
		for _, i := range cs.required {
			if _, ok := costs[i]; !ok {
				return nil, false
			}
		}
		return p.pickGang(groups, cs, r)
	}
	k := r.nodes
	sum := func(g group, n int) int64 {
		var c int64
		for _, i := range g.nodes[:n] {
			c += costs[i]
		}
		return c
	}
	sort.SliceStable(groups, func(a, b int) bool {
		if len(groups[a].nodes) != len(groups[b].nodes) {
			return len(groups[a].nodes) > len(groups[b].nodes)
		}
		return sum(groups[a], len(groups[a].nodes)) < sum(groups[b], len(groups[b].nodes))
	})
	var out []int32
	for i := 0; i < len(groups) && k > 0; i++ {
		if len(groups[i].nodes) >= k { // the remainder: the cheapest leaf that holds it
			best := i
			for j := i + 1; j < len(groups) && len(groups[j].nodes) >= k; j++ {
				if sum(groups[j], k) < sum(groups[best], k) {
					best = j
				}
			}
			out = append(out, groups[best].nodes[:k]...)
			k = 0
			break
		}
		out = append(out, groups[i].nodes...)
		k -= len(groups[i].nodes)
	}
	if k > 0 || (r.maxLeaves > 0 && p.leafSpan(out) > r.maxLeaves) {
		return nil, false
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out, true
}

// freeing reports what it costs to make node i fit r until end by removing
// jobs that a may remove (those in chosen, and leaving ones, first and
// free), which ones, and whether it is possible at all.
func (p *pass) freeing(i int32, r *request, a asker, chosen map[int]bool, end int64) (int64, []int, bool) {
	c := &p.nodes[i]
	if c.fits(r) {
		return 0, nil, p.resvFits(i, r, int(c.ngpu), c.cpus, c.mem, end)
	}
	if !c.up || !c.wholeFits(r) {
		return 0, nil, false
	}
	var movable []holder
	gpus, cpus, mem, stay := int(c.ngpu), c.cpus, c.mem, 0
	for _, h := range p.onNode[i] {
		lj := &p.live[h.live]
		switch {
		case chosen[h.live] || ((lj.claimedBy == 0 || lj.claimedBy == a.id) && (lj.leaving || (lj.preemptible && lj.class.below(a.me)))):
			movable = append(movable, h)
		case lj.job.Exclusive || r.excl:
			return 0, nil, false
		default:
			stay++
		}
	}
	if c.excl && stay > 0 {
		return 0, nil, false
	}
	free := func(h holder) int64 {
		if chosen[h.live] || p.live[h.live].leaving {
			return 0
		}
		return p.live[h.live].cost
	}
	sort.SliceStable(movable, func(a, b int) bool { // exclusive holders must go first
		if xa, xb := p.live[movable[a].live].job.Exclusive, p.live[movable[b].live].job.Exclusive; xa != xb {
			return xa
		}
		return free(movable[a]) < free(movable[b])
	})
	var cost int64
	var need []int
	for _, h := range movable {
		if gpus >= r.gpus && cpus >= r.cpus && mem >= r.mem && !r.excl && !p.live[h.live].job.Exclusive {
			break
		}
		gpus, cpus, mem = gpus+h.gpus, cpus+h.cpus, mem+h.mem
		cost += free(h)
		need = append(need, h.live)
	}
	return cost, need, gpus >= r.gpus && cpus >= r.cpus && mem >= r.mem && p.resvFits(i, r, gpus, cpus, mem, end)
}
