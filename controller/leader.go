package controller

import (
	"context"
	"reflect"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
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

// lead is the leader's loop: catch up, adopt config, then schedule and track
// liveness until leadership ends.
func (s *Server) lead(ctx context.Context) {
	// Catch up with every committed entry before acting as leader; retry
	// until it works or leadership ends, so a slow disk cannot leave a leader
	// that accepts nothing.
	for {
		err := s.raft.raft.Barrier(10 * time.Second).Error()
		if err == nil {
			break
		}
		s.log.Error("leader barrier; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
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
	s.mu.Lock()
	s.nextID = s.store.NextJobID()
	now := s.cfg.Clock.Now()
	s.lastSeen = map[string]time.Time{}
	for _, n := range s.store.Nodes() {
		s.lastSeen[n.Name] = now // grace: a full TTL after a leader change
	}
	s.mu.Unlock()
	s.log.Info("leading", "raft", s.RaftAddr(), "next_job_id", s.nextID)

	sched := time.NewTicker(s.cfg.SchedInterval)
	defer sched.Stop()
	live := time.NewTicker(s.cfg.NodeTTL / 4)
	defer live.Stop()
	s.schedulePass(ctx)
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.nextID = 0 // a later term re-reads it from the store
			s.mu.Unlock()
			return
		case <-sched.C:
			s.schedulePass(ctx)
		case <-s.kick:
			s.schedulePass(ctx)
		case <-live.C:
			s.checkLiveness(ctx)
		}
	}
}

// adoptPartitions makes the replicated partitions match the configured ones
// (or creates the default partition on an empty cluster).
func (s *Server) adoptPartitions(ctx context.Context) error {
	want := s.cfg.Partitions
	have := s.store.Partitions()
	if want == nil {
		if len(have) > 0 {
			return nil
		}
		want = []*cluster.Partition{DefaultPartition()}
	}
	if reflect.DeepEqual(normalizePartitions(want), normalizePartitions(have)) {
		return nil
	}
	_, err := s.propose(ctx, fsm.SetPartitions{Partitions: want})
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

// checkLiveness proposes DOWN, in one command, for every UP or DRAIN node
// silent past the TTL: a rack that goes dark together costs one commit.
func (s *Server) checkLiveness(ctx context.Context) {
	nodes := s.store.Nodes()
	now := s.cfg.Clock.Now()
	var silent []string
	s.mu.Lock()
	for _, n := range nodes {
		if n.State == cluster.NodeDown {
			continue
		}
		seen, ok := s.lastSeen[n.Name]
		if !ok {
			s.lastSeen[n.Name] = now
			seen = now
		}
		if now.Sub(seen) > s.cfg.NodeTTL {
			silent = append(silent, n.Name)
			s.log.Warn("node not responding", "node", n.Name, "silent", now.Sub(seen).Round(time.Second))
		}
	}
	s.mu.Unlock()
	if len(silent) == 0 {
		return
	}
	_, err := s.propose(ctx, fsm.SetNodesDown{Names: silent, Reason: store.ReasonNotResponding, Time: now})
	if err != nil {
		s.log.Error("mark nodes down", "nodes", silent, "err", err)
	}
	s.kickScheduler()
}
