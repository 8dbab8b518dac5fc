package controller

import (
	"context"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// startLivenessTerm gives every node a full TTL of grace, as if it had just
// been heard from, and forgets who was heard: nothing is placed on a node
// until this leader hears from it (its heartbeat, registration or a task
// report). An election must not cause a storm of NODE_FAIL, nor place jobs
// on nodes that are gone. s.mu is held.
func (s *Server) startLivenessTerm() {
	now := s.cfg.Clock.Now()
	s.lastSeen = map[string]time.Time{}
	s.heard = map[string]bool{}
	s.stopped = map[string]bool{}
	s.declaring = map[string]bool{}
	for _, n := range s.store.Nodes() {
		s.lastSeen[n.Name] = now
	}
}

// seen records that node was heard from at t. It reports false when this
// leader has found the node silent past the TTL and its DOWN is on its
// way: the node's tasks are about to be declared lost, and it must get no
// lease before it registers again.
func (s *Server) seen(node string, t time.Time) (live bool) {
	s.mu.Lock()
	s.lastSeen[node] = t
	first := !s.heard[node]
	s.heard[node] = true
	delete(s.stopped, node)
	live = !s.declaring[node]
	s.mu.Unlock()
	if first {
		s.kickScheduler() // it can take jobs now
	}
	return live
}

// shuttingDown records that node's agent stops (its last heartbeat said
// so, or it reported its tasks lost as it shut down): nothing is placed on
// the node until it is heard from again, as after an election, it shows as
// not responding, and its silence counts from t.
func (s *Server) shuttingDown(node string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastSeen[node] = t
	s.heard[node] = false
	s.stopped[node] = true
}

// admitRegistration lets node register, and so have a lease again, unless
// this leader found it silent and its DOWN is on its way: a lease granted
// before the DOWN applies would let its tasks outlive their declared end.
// It also refreshes the node's silence, so that no verdict is reached
// while it registers.
func (s *Server) admitRegistration(node string, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.declaring[node] {
		return cluster.Errorf(cluster.ErrConflict, "node %s is being declared down for its silence; register again in a moment", node)
	}
	s.lastSeen[node] = t
	return nil
}

// unheard returns which of the nodes this leader has not heard from yet.
func (s *Server) unheard(nodes []*cluster.Node) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for _, n := range nodes {
		if !s.heard[n.Name] {
			out[n.Name] = true
		}
	}
	return out
}

// checkLiveness proposes DOWN, in one command, for every UP or DRAIN node
// silent past the TTL: a rack that goes dark together costs one commit.
func (s *Server) checkLiveness(ctx context.Context) {
	now := s.cfg.Clock.Now()
	var silent []string
	s.mu.Lock()
	for _, n := range s.store.Nodes() {
		if n.State == cluster.NodeDown {
			continue
		}
		seen, ok := s.lastSeen[n.Name]
		if !ok { // registered since the term began
			s.lastSeen[n.Name] = now
			seen = now
		}
		if now.Sub(seen) > s.cfg.NodeTTL && !s.declaring[n.Name] {
			silent = append(silent, n.Name)
			s.declaring[n.Name] = true
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
	// Applied, the DOWN itself keeps the nodes from a lease until they
	// register again; failed, they are judged again at the next check.
	s.mu.Lock()
	for _, n := range silent {
		delete(s.declaring, n)
	}
	s.mu.Unlock()
	s.kickScheduler()
}
