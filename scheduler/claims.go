package scheduler

import (
	"sort"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Claims: a preemptor keeps what its victims free.
//
// A preemption takes a pass to decide and a grace period to happen: the
// victims are signalled, keep their resources while they checkpoint, and
// are requeued when their tasks have ended. Meanwhile other jobs come and
// go, and a job ahead of the preemptor in the queue (one that arrived, or
// whose reservation moved) would otherwise take the nodes being freed, or
// count the leaving victims as free for itself: the preemption would be
// wasted, and the preemptor would preempt again elsewhere. As in Slurm, the
// preemptor gets what its victims release instead.
//
// The victim's attempt records the pending attempt it was preempted for
// (cluster.Attempt.PreemptedFor). While that job is still PENDING in that
// attempt, the nodes of the victim's attempt are its claim, whether the
// victim is still leaving or has been requeued since. Claims are decided
// before the queue, in queue order (keep): a claimant starts at once if
// its claimed nodes hold its gang now, or, if they will once the victims
// leaving for it are gone, it holds them until its time limit from when
// the last victim leaves, its expected start. A gang that needs nodes that
// held no victim (idle when it preempted) takes those with room for it
// now as well, to hold or, once its victims have left, to start on. Only
// those nodes count, with what is free on them and the victims leaving for
// it (or for no one); it preempts nothing more. No other job counts those
// victims as free.
//
// A claim lapses when the preemptor no longer needs it: it started (here
// or elsewhere), was cancelled, or was requeued into a later attempt; or
// the claimed nodes, with those that have room now, can no longer hold its
// gang (a node went down, or one the gang needed was taken, by a claim
// ahead of it). The preemptor is then decided in its place in the queue
// like any job, and may preempt again.

// claim is a pending job's claim: the nodes of the attempts preempted for
// it, as a mask over the pass's nodes.
type claim struct {
	rank  ranked
	nodes []bool
}

// keepClaims decides the claimants (see above) before the queue and
// returns those it started or held their claims for: they are decided.
func (p *pass) keepClaims(plan *Plan, rank func(*cluster.Job) ranked) map[cluster.JobID]bool {
	claims := p.claims(rank)
	if len(claims) == 0 {
		return nil
	}
	kept := make(map[cluster.JobID]bool, len(claims))
	for _, c := range claims {
		if p.keepAny(plan, c) {
			kept[c.rank.job.ID] = true
		}
	}
	return kept
}

// claims finds the claims of the snapshot, in queue order, and gives the
// victims still leaving to their claimants (liveJob.claimedBy).
func (p *pass) claims(rank func(*cluster.Job) ranked) []*claim {
	var pending map[cluster.JobID]*cluster.Job // built when a record is found
	var byJob map[cluster.JobID]*claim
	var leavingFor map[cluster.JobID]cluster.JobID
	var out []*claim
	for _, v := range p.s.Jobs {
		n := len(v.Attempts)
		if n == 0 || v.Attempts[n-1].PreemptedFor.Job == 0 {
			continue
		}
		a := &v.Attempts[n-1]
		if pending == nil {
			pending, byJob, leavingFor = p.pendingByID(), map[cluster.JobID]*claim{}, map[cluster.JobID]cluster.JobID{}
		}
		j := pending[a.PreemptedFor.Job]
		if j == nil || j.Attempt != a.PreemptedFor.Attempt {
			continue // it started, ended, or moved on to a later attempt
		}
		c := byJob[j.ID]
		if c == nil {
			c = &claim{rank: rank(j), nodes: make([]bool, len(p.nodes))}
			byJob[j.ID] = c
			out = append(out, c)
		}
		for _, na := range a.Alloc.Nodes {
			if i, ok := p.index[na.Node]; ok {
				c.nodes[i] = true
			}
		}
		if v.Live() {
			leavingFor[v.ID] = j.ID
		}
	}
	if len(leavingFor) > 0 {
		p.indexLive()
		for k := range p.live {
			if id, ok := leavingFor[p.live[k].job.ID]; ok && p.live[k].leaving {
				p.live[k].claimedBy = id
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].rank.before(&out[b].rank) })
	return out
}

func (p *pass) pendingByID() map[cluster.JobID]*cluster.Job {
	out := map[cluster.JobID]*cluster.Job{}
	for _, j := range p.s.Jobs {
		if j.State == cluster.JobPending {
			out[j.ID] = j
		}
	}
	return out
}

// keepAny keeps a claim for the job, through its matching OR's
// alternatives when it has one (the first that can keep it).
func (p *pass) keepAny(plan *Plan, c *claim) bool {
	alts := alternatives(c.rank.job)
	if alts == nil {
		alts = []*cluster.Job{c.rank.job}
	}
	for _, v := range alts {
		if p.keep(plan, v, c.nodes) {
			return true
		}
	}
	return false
}

// keep starts j on the claimed nodes, or holds them for it while its
// victims leave; it reports whether it did either.
func (p *pass) keep(plan *Plan, j *cluster.Job, claimed []bool) bool {
	if p.barred(j) != "" {
		return false
	}
	cs, r := p.set(j), requestOf(j)
	if cs.bad != nil || p.neverFits(cs, r) != nil || !p.idleFits(cs, r) {
		return false
	}
	p.indexLive()
	r.maxLeaves = p.maxLeavesAt(j, p.nowNs)
	end := endOf(p.nowNs, p.limitOf(j))
	a := asker{id: j.ID, me: nobody}
	free := make([]bool, len(claimed)) // the claimed nodes that fit now: start there if they hold the gang
	for i, c := range claimed {
		free[i] = c && p.nodes[i].fits(&r)
	}
	if nodes, _, ok := p.victimGang(cs, &r, a, end, free); ok {
		return p.place(plan, j, nodes, &r, end)
	}
	nodes, victims, ok := p.victimGang(cs, &r, a, end, claimed)
	if !ok {
		// The gang needs nodes that held no victim (they were idle when it
		// preempted): those with room for it now are its too.
		usable := make([]bool, len(claimed))
		for i, c := range claimed {
			usable[i] = c || p.nodes[i].fits(&r)
		}
		if nodes, victims, ok = p.victimGang(cs, &r, a, end, usable); !ok {
			return false
		}
		if len(victims) == 0 { // its victims have left
			return p.place(plan, j, nodes, &r, end)
		}
	}
	start := p.hold(j, nodes, victims)
	info := p.blockedAs(j, false)
	info.ExpectedStart, info.SchedNodes = time.Unix(0, start).UTC(), p.names(nodes) // once the victims have left
	plan.Pending[j.ID] = info
	return true
}
