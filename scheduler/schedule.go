package scheduler

import (
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Schedule computes one pass: which pending jobs start now and on what,
// which running jobs to preempt, and why the others wait and until when.
// It reads s and now only; see the package doc for the steps.
func Schedule(s *Snapshot, now time.Time) *Plan {
	p := newPass(s, now)
	plan := &Plan{Pending: map[cluster.JobID]PendingInfo{}}
	tier := func(name string) int {
		if part := p.parts[name]; part != nil {
			return part.PriorityTier
		}
		return 0
	}
	q := queue(s.Jobs, tier, now, p.opt)
	kept := p.keepClaims(plan, ranker(tier, now, p.opt))
	plan.Queue = make([]cluster.JobID, len(q))
	for i, rj := range q {
		plan.Queue[i] = rj.job.ID
		if !kept[rj.job.ID] {
			p.decideAny(plan, rj.job)
		}
	}
	return plan
}

// scratch is reused buffers of one pass.
type scratch struct {
	groups   []group
	nodeBuf  []int32
	cands    []timed
	times    []int64
	reserved int             // reservations made so far
	blocked  map[string]bool // partitions with a blocked job already
	live     []liveJob       // for preemption, built on first use
	onNode   [][]holder      // by node index
	lowest   *class          // lowest class of a preemptible live job
}

// barred is why j's partition keeps it from running now ("" when it
// does not).
func (p *pass) barred(j *cluster.Job) cluster.PendingReason {
	part := p.parts[j.Partition]
	switch {
	case part == nil:
		return ReasonBadConstraints
	case part.State == cluster.PartitionInactive:
		return cluster.ReasonPartInactive
	case !schedulable(part.Partition):
		return cluster.ReasonPartDown
	case part.MaxTime > 0 && j.TimeLimit > part.MaxTime:
		return ReasonPartitionTimeLimit
	case part.MaxNodes > 0 && j.Nodes > part.MaxNodes, j.Nodes < part.MinNodes:
		return ReasonPartitionNodeLimit
	}
	return ""
}

// decide places one job or records why it waits.
func (p *pass) decide(plan *Plan, j *cluster.Job) {
	wait := func(reason cluster.PendingReason) { plan.Pending[j.ID] = PendingInfo{Reason: reason} }
	if reason := p.barred(j); reason != "" {
		wait(reason)
		return
	}
	cs := p.set(j)
	r := requestOf(j)
	if cs.bad != nil || p.neverFits(cs, r) != nil {
		wait(ReasonBadConstraints)
		return
	}
	if !p.idleFits(cs, r) {
		plan.Pending[j.ID] = PendingInfo{Reason: cluster.ReasonNodeAvail, Unavailable: p.nodeNotAvail(cs, r)}
		return
	}
	dur := p.limitOf(j)
	r.maxLeaves = p.maxLeavesAt(j, p.nowNs)
	end := endOf(p.nowNs, dur)
	nodes, byResv := p.gangNow(cs, &r, end)
	if nodes != nil {
		if !p.place(plan, j, nodes, &r, end) {
			wait(ReasonMasterPorts)
		}
		return
	}
	p.block(plan, j, cs, &r, dur, byResv)
}

// place starts j on nodes until end, unless rank 0's node has no
// MASTER_PORT left; it reports whether it did.
func (p *pass) place(plan *Plan, j *cluster.Job, nodes []int32, r *request, end int64) bool {
	port, ok := p.masterPort(p.nodes[nodes[0]].node.Name)
	if !ok {
		return false
	}
	alloc := cluster.Allocation{Nodes: make([]cluster.NodeAlloc, len(nodes))}
	by := cluster.PlacedMain
	for k, i := range nodes {
		if p.nodes[i].behind {
			by = cluster.PlacedBackfill
		}
		alloc.Nodes[k] = p.take(i, r, end)
	}
	plan.Placements = append(plan.Placements, Placement{Job: j.ID, Alloc: alloc, By: by, MasterPort: port})
	return true
}

// block records a job that cannot start now, with a reservation while the
// depth allows. As in Slurm, the first blocked job of a partition waits for
// Resources, the others for Priority; so does a job that fits now but would
// delay a reservation.
func (p *pass) block(plan *Plan, j *cluster.Job, cs *candSet, r *request, dur time.Duration, byResv bool) {
	info := p.blockedAs(j, byResv)
	if !byResv {
		if start, nodes, ok := p.preempt(plan, j, cs, r, endOf(p.nowNs, dur)); ok {
			info.ExpectedStart, info.SchedNodes = time.Unix(0, start).UTC(), p.names(nodes) // once the victims have left
			plan.Pending[j.ID] = info
			return
		}
	}
	if p.reserved < p.opt.ReserveDepth {
		p.reserved++
		if at, nodes, ok := p.reserve(cs, r, j, dur); ok {
			info.ExpectedStart = time.Unix(0, at).UTC()
			if info.ExpectedStart.Before(p.now) || at == p.nowNs {
				info.ExpectedStart = p.now
			}
			info.SchedNodes = p.names(nodes)
			plan.Reservations = append(plan.Reservations, Reservation{Job: j.ID, Start: info.ExpectedStart, Nodes: info.SchedNodes})
		}
	}
	plan.Pending[j.ID] = info
}

func (p *pass) names(nodes []int32) []string {
	out := make([]string, len(nodes))
	for k, i := range nodes {
		out[k] = p.nodes[i].node.Name
	}
	return out
}

// blockedAs is j's pending reason as a blocked job (byResv: it fits now
// but would delay a reservation); the first blocked job of a partition
// marks the partition's nodes: jobs placed on them later are backfill.
func (p *pass) blockedAs(j *cluster.Job, byResv bool) PendingInfo {
	info := PendingInfo{Reason: cluster.ReasonResources}
	if byResv || p.blocked[j.Partition] {
		info.Reason = cluster.ReasonPriority
	}
	if !p.blocked[j.Partition] {
		p.blocked[j.Partition] = true
		for _, i := range p.parts[j.Partition].members {
			p.nodes[i].behind = true
		}
	}
	return info
}

// gangNow assembles a gang from the nodes that fit r now and, where a
// reservation starts later, until end as well. byResv reports that it failed
// only because of reservations. A failure is remembered per request shape.
func (p *pass) gangNow(cs *candSet, r *request, end int64) (nodes []int32, byResv bool) {
	fk := failKey{excl: r.excl, segment: r.segment, maxLeaves: r.maxLeaves}
	f := failure{nodes: r.nodes, gpus: r.gpus, cpus: r.cpus, mem: r.mem, end: end}
	if hit, resv := dominated(cs.failed[fk], f); hit {
		return nil, resv
	}
	for _, i := range cs.required {
		if !p.nodes[i].fits(r) {
			cs.failed[fk] = append(cs.failed[fk], failure{nodes: r.nodes, gpus: r.gpus, cpus: r.cpus, mem: r.mem, end: -forever})
			return nil, false
		}
		if p.nodes[i].resv && !p.fitsOver(i, r, p.nowNs, end) {
			return nil, true
		}
	}
	groups, rejected := p.collectNow(cs, r, end)
	if nodes, ok := p.pickGang(groups, cs, r); ok {
		return nodes, false
	}
	if !rejected {
		f.end = -forever // fails whatever its end
	}
	f.resv = rejected
	cs.failed[fk] = append(cs.failed[fk], f)
	return nil, rejected
}

// collectNow groups by leaf the candidates that fit r now (and until end
// where a reservation starts later); rejected reports that some node fit
// now but not until end. Per request shape, each leaf's list of nodes that
// fit now is cached and recomputed only when the leaf changed.
func (p *pass) collectNow(cs *candSet, r *request, end int64) ([]group, bool) {
	fc := cs.cache(fitShape{gpus: r.gpus, cpus: r.cpus, mem: r.mem, excl: r.excl})
	groups, buf := p.groups[:0], p.nodeBuf[:0]
	rejected := false
	for k, cl := range cs.leaves {
		leaf := &p.leaves[cl.leaf]
		if fc.version[k] != leaf.version {
			fc.nodes[k] = p.fitting(cl.nodes, r, fc.nodes[k][:0])
			fc.version[k] = leaf.version
		}
		list := fc.nodes[k]
		if len(list) == 0 {
			continue
		}
		if leaf.reserved == 0 {
			groups = append(groups, group{leaf: cl.leaf, nodes: list})
			continue
		}
		start := len(buf)
		for _, i := range list {
			if p.nodes[i].resv && !p.fitsOver(i, r, p.nowNs, end) {
				rejected = true
				continue
			}
			buf = append(buf, i)
		}
		if len(buf) > start {
			groups = append(groups, group{leaf: cl.leaf, nodes: buf[start:len(buf):len(buf)]})
		}
	}
	p.groups, p.nodeBuf = groups, buf
	return groups, rejected
}

// fitting appends to out the nodes that fit r now.
func (p *pass) fitting(nodes []int32, r *request, out []int32) []int32 {
	if len(nodes) == 0 || (r.gpus > 0 && !p.leaves[p.nodes[nodes[0]].leaf].anyFree(r.gpus)) {
		return out
	}
	for _, i := range nodes {
		if p.nodes[i].fits(r) {
			out = append(out, i)
		}
	}
	return out
}

// fitShape is the per-node part of a request; fitCache remembers, per leaf
// of a candidate set, the nodes that fit it now and the leaf version seen.
type fitShape struct {
	gpus, cpus int
	mem        int64
	excl       bool
}

type fitCache struct {
	version []uint32
	nodes   [][]int32
}

func (cs *candSet) cache(sh fitShape) *fitCache {
	fc := cs.fits[sh]
	if fc == nil {
		fc = &fitCache{version: make([]uint32, len(cs.leaves)), nodes: make([][]int32, len(cs.leaves))}
		cs.fits[sh] = fc
	}
	return fc
}

// failKey and failure remember request shapes that did not fit now: within
// a pass, capacity only shrinks, so a shape at least as large (and, when
// reservations were in the way, ending no earlier) cannot fit either.
type failKey struct {
	excl      bool
	segment   int
	maxLeaves int
}

type failure struct {
	nodes, gpus, cpus int
	mem, end          int64
	resv              bool // reservations were in the way
}

func dominated(fs []failure, q failure) (hit, resv bool) {
	for _, f := range fs {
		if f.nodes <= q.nodes && f.gpus <= q.gpus && f.cpus <= q.cpus && f.mem <= q.mem && f.end <= q.end {
			if !f.resv {
				return true, false
			}
			hit, resv = true, true
		}
	}
	return hit, resv
}
