package scheduler

import (
	"fmt"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Matching OR ("--constraint=[a100|h100]": every node the same one of
// them). Each alternative is an ordinary constraint; the job is the job
// with one of them, so everything below (candidate sets, fits,
// reservations, preemption) is the same code as for any job.
//
//   - Feasible: the job could run when one alternative could.
//   - A pass starts the job on the first alternative, in the order
//     written, that fits now, as Slurm tries them in turn. When none does,
//     the job waits as its first alternative that could ever run waits
//     (its reason, its reservation, its preemptions).

// alternatives are the job with each alternative of its matching OR as its
// constraint; nil when its constraint has none (or does not parse: the
// plain path reports that).
func alternatives(j *cluster.Job) []*cluster.Job {
	c, err := cluster.ParseConstraint(j.Constraint)
	if err != nil || !c.Matching {
		return nil
	}
	out := make([]*cluster.Job, 0, len(c.Terms))
	for _, a := range c.Alternatives() {
		v := *j
		v.Constraint = a
		out = append(out, &v)
	}
	return out
}

// decideAny decides a job, through its matching OR's alternatives when it
// has one.
func (p *pass) decideAny(plan *Plan, j *cluster.Job) {
	alts := alternatives(j)
	if alts == nil {
		p.decide(plan, j)
		return
	}
	var first *cluster.Job // the first that could ever run
	for _, v := range alts {
		if p.startsNow(v) {
			p.decide(plan, v)
			return
		}
		if first == nil && p.couldRun(v) {
			first = v
		}
	}
	if first == nil {
		first = alts[0]
	}
	p.decide(plan, first)
}

// couldRun reports whether decide would find that j could ever run on its
// partition's nodes.
func (p *pass) couldRun(j *cluster.Job) bool {
	if p.parts[j.Partition] == nil {
		return false
	}
	cs := p.set(j)
	return cs.bad == nil && p.neverFits(cs, requestOf(j)) == nil
}

// startsNow reports whether decide would start j now (leaving the pass as
// it was: it places nothing).
func (p *pass) startsNow(j *cluster.Job) bool {
	part := p.parts[j.Partition]
	if part == nil || !schedulable(part.Partition) || !p.couldRun(j) {
		return false
	}
	cs, r := p.set(j), requestOf(j)
	if !p.idleFits(cs, r) {
		return false
	}
	r.maxLeaves = p.maxLeavesAt(j, p.nowNs)
	nodes, _ := p.gangNow(cs, &r, endOf(p.nowNs, p.limitOf(j)))
	return nodes != nil
}

// feasibleAny is Feasible through a matching OR's alternatives: nil when
// one could run, else the first one's reason, saying that the others
// cannot either.
func feasibleAny(s *Snapshot, alts []*cluster.Job) error {
	var first error
	names := make([]string, len(alts))
	for i, v := range alts {
		names[i] = v.Constraint
		err := Feasible(s, v)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return fmt.Errorf("%w; no other alternative (%s) can run either", first, strings.Join(names[1:], ", "))
}
