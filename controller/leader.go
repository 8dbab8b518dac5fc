package controller

import (
	"context"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// leadership runs the leader's duties while this replica leads.
func (s *Server) leadership() {
	leaderCh := s.raft.raft.LeaderCh()
	var cancel context.CancelFunc
	done := make(chan struct{})
	close(done)
	for {
		select {
		case <-s.stop:
			if cancel != nil {
				cancel()
			}
			<-done
			return
		case isLeader := <-leaderCh:
			if cancel != nil {
				cancel()
				<-done
				cancel = nil
			}
			if isLeader {
				var ctx context.Context
				ctx, cancel = context.WithCancel(context.Background())
				done = make(chan struct{})
				go func() {
					defer close(done)
					s.lead(ctx)
				}()
			}
		}
	}
}

// lead is the leader's loop: take over, then schedule, track liveness and
// expire old records until leadership ends.
func (s *Server) lead(ctx context.Context) {
	if !s.takeOver(ctx) {
		return
	}
	defer s.stepDown()
	s.log.Info("leading", "id", s.ID(), "raft", s.RaftAddr(), "next_job_id", s.NextJobID())
	go s.raiseFeatureLevel(ctx)

	sched := time.NewTicker(s.cfg.SchedInterval)
	defer sched.Stop()
	live := time.NewTicker(s.cfg.NodeTTL / 4)
	defer live.Stop()
	janitor := time.NewTicker(s.cfg.JanitorInterval)
	defer janitor.Stop()
	var passes passClock
	var head queueHead
	passes.run(func() { s.schedulePass(ctx, &head, true) })
	for {
		select {
		case <-ctx.Done():
			return
		case <-sched.C:
			passes.run(func() { s.schedulePass(ctx, &head, true) })
		case <-s.kick:
			// Coalesce a burst into one pass, and leave at least as long
			// between event-driven passes as the last one took: a deep
			// queue makes passes slower, and they must not take a whole
			// core from the API and Raft.
			if wait := passes.gap(s.cfg.SchedMinGap); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			select { // the kicks that came meanwhile are served by this pass
			case <-s.kick:
			default:
			}
			passes.run(func() { s.schedulePass(ctx, &head, false) })
		case <-live.C:
			s.checkLiveness(ctx)
		case <-janitor.C:
			s.expire(ctx)
		}
	}
}

// passClock times scheduling passes.
type passClock struct {
	end  time.Time     // when the last pass ended
	took time.Duration // how long it took
}

func (c *passClock) run(pass func()) {
	start := time.Now()
	pass()
	c.end = time.Now()
	c.took = c.end.Sub(start)
}

// gap is how long to wait before the next event-driven pass: at least
// minGap, and at least as long as the last pass took, after it ended.
func (c *passClock) gap(minGap time.Duration) time.Duration {
	return max(minGap, c.took) - time.Since(c.end)
}

// takeOver makes a new leader ready: it applies every entry committed
// before it (a barrier, retried until it works or leadership ends, so a
// slow disk cannot leave a leader that accepts nothing), adopts the
// configured partitions and node settings, and starts a new liveness term.
// It reports whether the replica is ready to lead.
func (s *Server) takeOver(ctx context.Context) bool {
	for {
		f := s.raft.raft.Barrier(10 * time.Second)
		err := waitFuture(ctx, f)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return false
		}
		s.log.Error("leader barrier; retrying", "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
	// Partitions first: ready() (nextID set) must imply that submits see
	// the configured partitions, or a submit right after an election finds
	// no default partition.
	if err := s.adoptPartitions(ctx); err != nil {
		s.log.Error("adopt partitions", "err", err)
	}
	if err := s.adoptNodeConf(ctx); err != nil {
		s.log.Error("adopt node config", "err", err)
	}
	s.raiseAlone(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	s.startLivenessTerm()
	s.nextID = s.store.NextJobID()
	s.term = make(chan struct{})
	return true
}

// stepDown ends this replica's leadership duties.
func (s *Server) stepDown() {
	s.mu.Lock()
	s.nextID = 0 // a later term re-reads it from the store
	s.pending = pendingReasons{}
	close(s.term) // streams served as leader end
	s.term = nil
	s.mu.Unlock()
	s.log.Info("no longer leading", "id", s.ID())
}

// leaderTerm returns a channel closed when this replica's current
// leadership ends; nil when it does not lead.
func (s *Server) leaderTerm() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nextID == 0 {
		return nil
	}
	return s.term
}

// NextJobID is the ID the leader hands out next (0 when not leading).
func (s *Server) NextJobID() cluster.JobID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextID
}

// adoptPartitions makes the replicated partitions the configured ones when
// the config's changed since they were last applied (reconfigure.go), or
// creates the default partition on an empty cluster.
func (s *Server) adoptPartitions(ctx context.Context) error {
	if s.cfg.Reload != nil { // another replica may have applied a newer file
		if fixed, _, err := s.reread(); err != nil || len(fixed) > 0 {
			s.log.Warn("taking over with the config as it was read at start", "err", err, "needs a restart", fixed)
		}
	}
	_, err := s.applyConfigPartitions(ctx, false)
	return err
}

func normalizePartitions(ps []*cluster.Partition) []cluster.Partition {
	out := make([]cluster.Partition, len(ps))
	for i, p := range ps {
		out[i] = *p
		if len(out[i].Nodes) == 0 {
			out[i].Nodes = nil
		}
	}
	return out
}
