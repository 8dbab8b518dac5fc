package controller

import (
	"context"
	"slices"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/scheduler"
	"github.com/phalanx-hpc/phalanx/store"
)

// snapshot is what the scheduler sees of a consistent read of the state:
// its nodes and partitions, the given jobs (the active ones, perhaps with a
// probe), the topology, the jobs already being preempted, the nodes this
// leader has not heard from yet, and the options of every pass (a quick
// one limits its depth too).
func (s *Server) snapshot(st *store.State, jobs []*cluster.Job) *scheduler.Snapshot {
	return &scheduler.Snapshot{
		Nodes:      st.Nodes,
		Partitions: st.Partitions,
		Jobs:       jobs,
		Topology:   s.cfg.Topology,
		Preempting: preempting(st.Active),
		Unheard:    s.unheard(st.Nodes),
		Options: scheduler.Options{
			FairShare:     s.fairShare.term(),
			MasterPortMin: s.cfg.MasterPortMin,
			MasterPortMax: s.cfg.MasterPortMax,
			PreemptGrace:  s.cfg.PreemptGrace,
			KillGrace:     s.cfg.KillGrace,
		},
	}
}

// schedulePass runs the pure scheduler over a consistent read of the state
// and proposes its preemptions (see preempt.go) and placements. The store
// re-checks every gang at apply time, so a plan made on a state that moved
// on is skipped, never half-applied.
//
// A full pass (head nil) decides every pending job and leaves the head of
// its queue in head. A quick one (after an event) looks at the live jobs
// and at the pending jobs head.candidates picks and those changed since
// the last pass (Server.touched: a job released is decided at once), and
// decides only the first SchedQueueDepth of those in priority order, so
// that its cost does not grow with the queue. Pending reasons come from the last pass that
// decided the job.
func (s *Server) schedulePass(ctx context.Context, head *queueHead, full bool) {
	s.mu.Lock()
	touched := s.touched
	s.touched = nil
	s.mu.Unlock()
	read := s.store.State
	if !full {
		ids := slices.Clone(head.ids)
		for _, id := range touched {
			if !slices.Contains(ids, id) { // once: the scheduler must see a job once
				ids = append(ids, id)
			}
		}
		read = func() (*store.State, error) { return s.store.QueueState(ids, head.last) }
	}
	committed := s.committedBelow() // before the read: every job below it is in what is read
	st, err := read()
	if err != nil {
		s.log.Error("schedule: read state", "err", err)
		return
	}
	now := s.cfg.Clock.Now()
	if full {
		s.fairShare.update(st.Active, now)
	}
	jobs, gate := s.gate.sift(st.Active, now)
	snap := s.snapshot(st, jobs)
	if !full {
		snap.Options.QueueDepth = s.cfg.SchedQueueDepth
	}
	plan := scheduler.Schedule(snap, now)
	if full {
		head.record(plan, max(committed, 1)-1, 2*s.cfg.SchedQueueDepth)
	}
	for id, info := range gate.waiting {
		plan.Pending[id] = info
	}
	s.endHeldBack(ctx, gate, now)

	s.mu.Lock()
	s.pending.record(plan.Pending, full) // fresh maps each pass, never written after
	s.mu.Unlock()
	s.preempt(ctx, plan, jobs, now)
	if len(plan.Placements) == 0 {
		return
	}

	placements := make([]store.Placement, 0, len(plan.Placements))
	for _, p := range plan.Placements {
		placements = append(placements, store.Placement{Job: p.Job, Alloc: p.Alloc, MasterPort: p.MasterPort, Time: now, By: p.By})
	}
	res, err := s.propose(ctx, fsm.PlaceJobs{Placements: placements})
	if err != nil {
		s.log.Error("commit placements", "err", err)
		return
	}
	for _, id := range res.IDs {
		s.log.Debug("placed", "job", id)
	}
}

// committedBelow is an ID below which every job this leader handed out is
// committed and applied (or failed): the lowest ID still being committed,
// else the next one to hand out.
func (s *Server) committedBelow() cluster.JobID {
	s.mu.Lock()
	defer s.mu.Unlock()
	low := s.nextID
	for id := range s.inflight {
		low = min(low, id)
	}
	return low
}

// queueHead is what a full pass leaves for the quick passes after it: the
// first jobs its queue leaves pending, and the ID below which every job
// was in the state it read. A quick pass looks at those, at the jobs above
// last (submitted since, or still being committed then) and requeued
// ones, and at the jobs holding resources (store.QueueState). The jobs it
// leaves out were behind at least len(ids) others at the last full pass,
// and jobs move up only by age, which changes little between two full
// passes; the next full pass decides them all again. Before any full pass
// (last 0) a quick pass sees every job.
type queueHead struct {
	ids  []cluster.JobID
	last cluster.JobID
}

// record keeps the first n jobs of a full pass's queue that it did not
// place, and last.
func (h *queueHead) record(plan *scheduler.Plan, last cluster.JobID, n int) {
	placed := make(map[cluster.JobID]bool, len(plan.Placements))
	for _, p := range plan.Placements {
		placed[p.Job] = true
	}
	h.ids = h.ids[:0]
	for _, id := range plan.Queue {
		if len(h.ids) == n {
			break
		}
		if !placed[id] {
			h.ids = append(h.ids, id)
		}
	}
	h.last = last
}

// pendingReasons are the leader's last word on why each pending job waits:
// from the last quick pass when it decided the job, else from the last
// full one.
type pendingReasons struct {
	full, quick map[cluster.JobID]scheduler.PendingInfo
}

func (r *pendingReasons) record(p map[cluster.JobID]scheduler.PendingInfo, full bool) {
	if full {
		r.full, r.quick = p, nil
		return
	}
	r.quick = p
}

func (r *pendingReasons) get(id cluster.JobID) (scheduler.PendingInfo, bool) {
	if p, ok := r.quick[id]; ok {
		return p, true
	}
	p, ok := r.full[id]
	return p, ok
}
