package scheduler

import (
	"math"
	"slices"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// use is capacity held on one node during [from, to): by a live job (from
// the distant past to the end of its time limit), by a placement of this
// pass (now to now + limit) or by a reservation (its start to start +
// limit). to is forever without a time limit. Uses are kept in one slice,
// linked per node from nodeCap.head.
type use struct {
	from, to int64
	gpus     int
	cpus     int
	mem      int64
	excl     bool
	next     int32
	job      cluster.JobID // the live job holding it; 0: a placement or reservation of this pass
}

// addUse holds u on node i.
func (tl *timeline) addUse(i int32, u use) {
	u.next = tl.nodes[i].head
	tl.nodes[i].head = int32(len(tl.uses))
	tl.uses = append(tl.uses, u)
}

// fitsOver reports whether node i can hold r during all of [from, to),
// given every use on it. Usage only rises where a use starts, so it is
// checked at from and at each later start inside the window.
func (tl *timeline) fitsOver(i int32, r *request, from, to int64) bool {
	c := &tl.nodes[i]
	if !c.wholeFits(r) {
		return false
	}
	for k := c.head; k >= 0; k = tl.uses[k].next {
		u := &tl.uses[k]
		if u.to <= from || u.from >= to {
			continue
		}
		if r.excl || u.excl || !tl.freeAt(i, r, max(u.from, from)) {
			return false
		}
	}
	return true
}

// freeAt reports whether node i has r free at instant t.
func (tl *timeline) freeAt(i int32, r *request, t int64) bool {
	c := &tl.nodes[i]
	gpus, cpus, mem := int(c.allGPUs), c.allCPUs, c.allMem
	for k := c.head; k >= 0; k = tl.uses[k].next {
		if u := &tl.uses[k]; u.from <= t && t < u.to {
			gpus, cpus, mem = gpus-u.gpus, cpus-u.cpus, mem-u.mem
		}
	}
	return gpus >= r.gpus && cpus >= r.cpus && mem >= r.mem
}

// earliest is the first instant from now at which node i can hold r for
// dur (0: forever): now, or the end of one of its uses. forever: never.
func (tl *timeline) earliest(i int32, r *request, dur time.Duration) int64 {
	c := &tl.nodes[i]
	if c.fits(r) && !c.resv {
		return tl.nowNs
	}
	if !c.wholeFits(r) { // fitsOver would refuse every start
		return forever
	}
	var buf [16]int64
	times := append(buf[:0], tl.nowNs)
	for k := c.head; k >= 0; k = tl.uses[k].next {
		if t := tl.uses[k].to; t > tl.nowNs && t != forever {
			times = append(times, t)
		}
	}
	sortSmall(times)
	for _, t := range times {
		if tl.fitsOver(i, r, t, endOf(t, dur)) {
			return t
		}
	}
	return forever
}

// sortSmall sorts a few times ascending (insertion sort: a node holds few
// uses, so this beats the general sort).
func sortSmall(ts []int64) {
	if len(ts) > 32 {
		slices.Sort(ts)
		return
	}
	for k := 1; k < len(ts); k++ {
		for m := k; m > 0 && ts[m] < ts[m-1]; m-- {
			ts[m], ts[m-1] = ts[m-1], ts[m]
		}
	}
}

func endOf(start int64, dur time.Duration) int64 {
	if dur <= 0 || start > forever-int64(dur) {
		return forever
	}
	return start + int64(dur)
}

// timed is a candidate node and the earliest time it can hold a request.
type timed struct {
	t int64
	i int32
}

// maxReserveTries bounds how many start times a reservation tries once
// enough nodes are free in number, in case topology rules keep refusing.
const maxReserveTries = 16

// reserve finds the earliest time and nodes at which j's gang fits given
// every use (live jobs, this pass's placements and earlier reservations),
// and holds them from then for the job's time limit. It reports false when
// no such time is known (what it needs is held without a time limit).
func (p *pass) reserve(cs *candSet, r *request, j *cluster.Job, dur time.Duration) (int64, []int32, bool) {
	reqT := p.nowNs
	for _, i := range cs.required {
		t := p.earliest(i, r, dur)
		if t == forever {
			return 0, nil, false
		}
		reqT = max(reqT, t)
	}
	cands := p.cands[:0]
	for _, cl := range cs.leaves {
		for _, i := range cl.nodes {
			if t := p.earliest(i, r, dur); t != forever {
				cands = append(cands, timed{t, i})
			}
		}
	}
	p.cands = cands
	need := r.nodes - len(cs.required)
	if need > len(cands) {
		return 0, nil, false
	}
	// The first start worth trying is when need nodes are free in number;
	// later ones are the next distinct times, in case topology refuses.
	t := p.nthTime(cands, need)
	for _, fc := range cs.counts { // and when each count's nodes are
		var with []timed
		for _, c := range cands {
			if p.hasFeature(c.i, fc.Feature) {
				with = append(with, c)
			}
		}
		if len(with) < fc.Nodes {
			return 0, nil, false
		}
		t = max(t, p.nthTime(with, fc.Nodes))
	}
	for tries := 0; tries < maxReserveTries && t != forever; tries++ {
		start := max(t, reqT)
		if nodes, ok := p.gangAt(cs, r, j, cands, t, start, dur); ok {
			for _, i := range nodes {
				p.addUse(i, use{from: start, to: endOf(start, dur), gpus: r.gpus, cpus: r.cpus, mem: r.mem, excl: r.excl})
				p.markReserved(i)
			}
			return start, nodes, true
		}
		next := forever
		if relax := p.switchesEnd(j); relax > t { // --switches relaxes then
			next = relax
		}
		for _, c := range cands {
			if c.t > t && c.t < next {
				next = c.t
			}
		}
		t = next
	}
	return 0, nil, false
}

// nthTime is the k-th smallest time among the candidates (k from 1).
func (p *pass) nthTime(cands []timed, k int) int64 {
	if k <= 0 {
		return p.nowNs
	}
	times := p.times[:0]
	for _, c := range cands {
		times = append(times, c.t)
	}
	p.times = times
	return nthSmallest(times, k-1)
}

// nthSmallest returns what xs[k] would be if xs were sorted, reordering xs
// (quickselect with a median-of-three pivot).
func nthSmallest(xs []int64, k int) int64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		pivot := median3(xs[lo], xs[mid], xs[hi])
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i, j = i+1, j-1
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

func median3(a, b, c int64) int64 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	return max(a, b)
}

// gangAt tries to assemble the gang at start from the candidates free by
// upTo that can hold r from start for dur.
func (p *pass) gangAt(cs *candSet, r *request, j *cluster.Job, cands []timed, upTo, start int64, dur time.Duration) ([]int32, bool) {
	end := endOf(start, dur)
	for _, i := range cs.required {
		if !p.fitsOver(i, r, start, end) {
			return nil, false
		}
	}
	var ok []int32
	for _, c := range cands { // in candidate order
		if c.t <= upTo && (c.t == start || p.fitsOver(c.i, r, start, end)) {
			ok = append(ok, c.i)
		}
	}
	rr := *r
	rr.maxLeaves = p.maxLeavesAt(j, start)
	return p.pickGang(p.byLeaf(ok), cs, &rr)
}

// maxLeavesAt is the job's leaf limit at instant t: Switches until
// submit + SwitchesWait (or Options.DefaultSwitchWait), then none.
func (p *pass) maxLeavesAt(j *cluster.Job, t int64) int {
	if t < p.switchesEnd(j) {
		return j.Switches
	}
	return 0
}

// switchesEnd is the instant the job's --switches wait ends and its leaf
// limit goes: submit + SwitchesWait (or Options.DefaultSwitchWait); 0
// without a limit. A reservation tries it as a start time, so a job that
// waits for few leaves expects to start when it relaxes if it can then.
func (p *pass) switchesEnd(j *cluster.Job) int64 {
	if j.Switches <= 0 {
		return 0
	}
	wait := j.SwitchesWait
	if wait <= 0 {
		wait = p.opt.DefaultSwitchWait
	}
	return j.SubmitTime.Add(wait).UnixNano()
}

// markReserved notes that a reservation starts on node i later.
func (tl *timeline) markReserved(i int32) {
	if c := &tl.nodes[i]; !c.resv {
		c.resv = true
		tl.leaves[c.leaf].reserved++
	}
}

// endUses ends live job vj's uses at t, when it has left, wherever it is
// (a victim chosen by this pass runs until its time limit in the uses
// made at the start of the pass).
func (tl *timeline) endUses(vj *cluster.Job, t int64) {
	for _, a := range vj.Alloc.Nodes {
		i, ok := tl.index[a.Node]
		if !ok {
			continue
		}
		for k := tl.nodes[i].head; k >= 0; k = tl.uses[k].next {
			if u := &tl.uses[k]; u.job == vj.ID {
				u.to = min(u.to, t)
			}
		}
	}
}

// resvFits reports whether r fits on node i until end beside the
// reservations of this pass, given what is free there now (or would be,
// once victims leave): a job ahead of the preemptor has them, so a
// preemptor that needs such a node could not start on it after its
// victims left, and would preempt again at every pass while they are
// backfilled back. The live jobs that stay count as staying: no
// preemption rather than a wasted one.
func (tl *timeline) resvFits(i int32, r *request, gpus, cpus int, mem int64, end int64) bool {
	c := &tl.nodes[i]
	if !c.resv {
		return true
	}
	for k := c.head; k >= 0; k = tl.uses[k].next {
		u := &tl.uses[k]
		if u.from == math.MinInt64 || u.to <= tl.nowNs || u.from >= end {
			continue // a live job's or this pass's placement, or outside
		}
		if r.excl || u.excl {
			return false
		}
		g, cp, m := gpus, cpus, mem // free at u's start, reservations taken
		t := max(u.from, tl.nowNs)
		for k2 := c.head; k2 >= 0; k2 = tl.uses[k2].next {
			if v := &tl.uses[k2]; v.from != math.MinInt64 && v.from <= t && t < v.to {
				g, cp, m = g-v.gpus, cp-v.cpus, m-v.mem
			}
		}
		if g < r.gpus || cp < r.cpus || m < r.mem {
			return false
		}
	}
	return true
}
