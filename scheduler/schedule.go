package scheduler

import (
	"sort"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Schedule computes one pass: which pending jobs start now and on what, and
// why the others wait. It reads s and now only; see the package doc for the
// steps.
func Schedule(s *Snapshot, now time.Time) *Plan {
	p := newPool(s)
	plan := &Plan{Pending: map[cluster.JobID]PendingInfo{}}
	held := holdings(s.Jobs)
	blocked := map[string]bool{} // partitions whose head job could not start
	for _, j := range queue(s.Jobs, p) {
		alloc, reason := p.decide(j, blocked[j.Partition])
		switch reason {
		case "":
			plan.Placements = append(plan.Placements, Placement{Job: j.ID, Alloc: alloc})
			if j.TimeLimit > 0 {
				held = append(held, holding{end: now.Add(j.TimeLimit), nodes: alloc.Nodes})
			}
		case cluster.ReasonResources:
			blocked[j.Partition] = true
			r := requestOf(j)
			plan.Pending[j.ID] = PendingInfo{Reason: reason,
				ExpectedStart: expectedStart(candidates(p.parts[j.Partition], r), r, held, now)}
		case cluster.ReasonNodeAvail:
			blocked[j.Partition] = true
			plan.Pending[j.ID] = PendingInfo{Reason: reason}
		default:
			plan.Pending[j.ID] = PendingInfo{Reason: reason}
		}
	}
	return plan
}

// queue returns the pending jobs in scheduling order: partition
// PriorityTier (higher first), Job.Priority (higher first), submit time,
// then ID.
func queue(jobs []*cluster.Job, p *pool) []*cluster.Job {
	var out []*cluster.Job
	for _, j := range jobs {
		if j.State == cluster.JobPending {
			out = append(out, j)
		}
	}
	tier := func(j *cluster.Job) int {
		if part := p.parts[j.Partition]; part != nil {
			return part.PriorityTier
		}
		return 0
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if tx, ty := tier(x), tier(y); tx != ty {
			return tx > ty
		}
		if x.Priority != y.Priority {
			return x.Priority > y.Priority
		}
		if !x.SubmitTime.Equal(y.SubmitTime) {
			return x.SubmitTime.Before(y.SubmitTime)
		}
		return x.ID < y.ID
	})
	return out
}

// decide places one job, taking its capacity from the pool, or returns the
// reason it waits. behind says a job ahead in the partition is waiting.
func (p *pool) decide(j *cluster.Job, behind bool) (cluster.Allocation, string) {
	part := p.parts[j.Partition]
	if part == nil {
		return cluster.Allocation{}, ReasonBadConstraints
	}
	if !schedulable(part.Partition) {
		return cluster.Allocation{}, cluster.ReasonPartDown
	}
	r := requestOf(j)
	if part.neverFits(r) != nil {
		return cluster.Allocation{}, ReasonBadConstraints
	}
	if behind {
		return cluster.Allocation{}, cluster.ReasonPriority
	}
	cands := candidates(part, r)
	gang, ok := assemble(fitting(cands, r), r.nodes)
	if !ok {
		return cluster.Allocation{}, waitReason(cands, r)
	}
	alloc := cluster.Allocation{Nodes: make([]cluster.NodeAlloc, len(gang))}
	for i, c := range gang {
		alloc.Nodes[i] = c.take(r)
	}
	return alloc, ""
}

// waitReason tells Resources (busy: would fit on the UP nodes if they were
// idle) from ReqNodeNotAvail (would need nodes that are DOWN or DRAINED).
func waitReason(cands []*nodeCap, r request) string {
	idle := make([]*nodeCap, len(cands))
	for i, c := range cands {
		idle[i] = whole(c)
	}
	if _, ok := assemble(fitting(idle, r), r.nodes); ok {
		return cluster.ReasonResources
	}
	return cluster.ReasonNodeAvail
}
