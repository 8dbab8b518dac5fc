package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/phalanx-hpc/phalanx/scheduler"
)

// loop runs events until every job has ended, or until the jobs left can
// never start (nothing runs, nothing arrives, no node is down, and no
// --switches wait is left to expire).
func (s *sim) loop(ctx context.Context) error {
	for !s.done() {
		now, ok := s.events.next()
		if !ok {
			return nil
		}
		changed := false
		for at, ok := s.events.next(); ok && at.Equal(now); at, ok = s.events.next() {
			c, err := s.handle(s.events.pop(), now)
			if err != nil {
				return err
			}
			changed = changed || c
		}
		if !changed || s.pending.len() == 0 {
			continue // nothing new, or nothing to place
		}
		if err := s.pass(now); err != nil {
			return err
		}
		s.armTick(now)
		if len(s.passTimes)%1000 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("simulation stopped at %s of virtual time: %w", now.Sub(Epoch), err)
			}
			s.progress(now)
		}
	}
	return nil
}

func (s *sim) done() bool {
	return s.arrivalsLeft == 0 && s.pending.len() == 0 && s.running.len() == 0
}

// handle applies one event; it reports whether the state changed, that is
// whether a scheduling pass is due.
func (s *sim) handle(e event, now time.Time) (bool, error) {
	switch e.kind {
	case evArrive:
		s.arrivalsLeft--
		s.enqueue(e.job, now)
		return true, nil
	case evEnd:
		return s.endIfCurrent(e, now), nil
	case evRequeue:
		return s.requeueIfCurrent(e, now), nil
	case evFail:
		return s.fail(now), nil
	case evRepair:
		s.repair(e.node, now)
		return true, nil
	case evTick:
		return s.pending.len() > 0, nil
	case evWake:
		return e.job.pendSlot >= 0 && e.job.job.Attempt == e.attempt, nil
	}
	return false, fmt.Errorf("unknown event kind %d", e.kind)
}

// pass runs the scheduler on the current state and applies its plan.
func (s *sim) pass(now time.Time) error {
	s.snapJobs = s.snapJobs[:0]
	for _, j := range s.pending.items {
		s.snapJobs = append(s.snapJobs, j.job)
	}
	for _, j := range s.running.items {
		s.snapJobs = append(s.snapJobs, j.job)
	}
	snap := &scheduler.Snapshot{Nodes: s.nodes, Partitions: s.cfg.Partitions, Jobs: s.snapJobs, Topology: s.cfg.Tree,
		Preempting: s.preempting, Options: s.cfg.Options}
	var start time.Time
	if s.cfg.Clock != nil {
		start = s.cfg.Clock()
	}
	plan := scheduler.Schedule(snap, now)
	var took time.Duration
	if s.cfg.Clock != nil {
		took = s.cfg.Clock().Sub(start)
	}
	s.passTimes = append(s.passTimes, took)
	placed := make([]*simJob, 0, len(plan.Placements))
	for _, p := range plan.Placements {
		j, err := s.place(p, now)
		if err != nil {
			return fmt.Errorf("pass at %s: %w", now.Sub(Epoch), err)
		}
		placed = append(placed, j)
	}
	s.markBackfilled(placed, now)
	for _, p := range plan.Preemptions {
		if err := s.preempt(p, now); err != nil {
			return fmt.Errorf("pass at %s: %w", now.Sub(Epoch), err)
		}
	}
	return nil
}

// enqueue makes a job pending. A job with a --switches wait gets passes
// when the wait expires, counted from its submission or, after a requeue,
// from now, and one pass interval later, in case the scheduler counts the
// wait from later than the simulator thinks.
func (s *sim) enqueue(j *simJob, now time.Time) {
	s.pending.add(j)
	if j.job.Switches <= 0 {
		return
	}
	wait := j.job.SwitchesWait
	if wait <= 0 {
		wait = s.cfg.Options.DefaultSwitchWait
	}
	for _, from := range []time.Time{j.job.SubmitTime, now} {
		for _, at := range []time.Time{from.Add(wait), from.Add(wait + s.cfg.PassInterval)} {
			if at.After(now) {
				s.events.push(event{at: at, kind: evWake, job: j, attempt: j.job.Attempt})
			}
		}
		if now.Equal(j.job.SubmitTime) {
			break
		}
	}
}

// armTick makes sure, with IdlePasses, that a pass runs within
// PassInterval while jobs are pending and something could still let them
// start.
func (s *sim) armTick(now time.Time) {
	if !s.cfg.IdlePasses || s.pending.len() == 0 || s.nextTick.After(now) || !s.mayProgress() {
		return
	}
	s.nextTick = now.Add(s.cfg.PassInterval)
	s.events.push(event{at: s.nextTick, kind: evTick})
}

// mayProgress reports whether a later pass could place a job the last one
// did not: something runs or will arrive, or a node will come back.
func (s *sim) mayProgress() bool {
	return s.running.len() > 0 || s.arrivalsLeft > 0 || s.down > 0
}

func (s *sim) progress(now time.Time) {
	if s.cfg.Progress == nil {
		return
	}
	fmt.Fprintf(s.cfg.Progress, "sim: t=%s passes=%d pending=%d running=%d ended=%d/%d\n",
		now.Sub(Epoch).Truncate(time.Second), len(s.passTimes), s.pending.len(), s.running.len(), s.finished, len(s.jobs))
}
