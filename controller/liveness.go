package controller

import (
	"context"
	"sync"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// liveness is the leader's memory of its nodes: when each was last heard
// from, which it has heard from since it took over and since their agent
// last said it stops, and which it found silent past the TTL while their
// DOWN is being committed. It decides nothing but what it is asked; the
// Server acts on its answers (kicks the scheduler, proposes DOWN). Its
// lock is its own.
type liveness struct {
	mu        sync.Mutex
	began     time.Time // when this term began (reset)
	lastSeen  map[string]time.Time
	heard     map[string]bool // since this leader took over, and since the agent said it stops
	declaring map[string]bool // found silent; the DOWN is on its way: no lease
}

// reset starts a term: every node gets a full TTL of grace from now, as if
// just heard from, and none counts as heard.
func (l *liveness) reset(nodes []*cluster.Node, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.began = now
	l.lastSeen = make(map[string]time.Time, len(nodes))
	l.heard, l.declaring = map[string]bool{}, map[string]bool{}
	for _, n := range nodes {
		l.lastSeen[n.Name] = now
	}
}

// termBegan is when this term began: the zero time before the first.
func (l *liveness) termBegan() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.began
}

// seen records that node was heard from at t. live is false while its DOWN
// is on its way; first is true the first time this term.
func (l *liveness) seen(node string, t time.Time) (live, first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastSeen[node] = t
	first = !l.heard[node]
	l.heard[node] = true
	return !l.declaring[node], first
}

// stopping records that node's agent stops: unheard again, not
// responding, silent from t.
func (l *liveness) stopping(node string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastSeen[node] = t
	l.heard[node] = false
}

// registering refreshes node's silence for a registration, and reports
// false, changing nothing, while its DOWN is on its way.
func (l *liveness) registering(node string, t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.declaring[node] {
		return false
	}
	l.lastSeen[node] = t
	return true
}

// unheard returns which of the nodes have not been heard from this term.
func (l *liveness) unheard(nodes []*cluster.Node) map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for _, n := range nodes {
		if !l.heard[n.Name] {
			out[n.Name] = true
		}
	}
	return out
}

// of is what ListNodes shows of a node: when it was last heard from, and
// whether it has been heard from this term and since its agent last said
// it stops (else nothing is placed on it: it shows as not responding).
func (l *liveness) of(node string) (seen time.Time, heard bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeen[node], l.heard[node]
}

// silentNode is a node found silent, and for how long.
type silentNode struct {
	name      string
	silentFor time.Duration
}

// silent returns the nodes that have been silent longer than ttl at now
// and are not already being declared, and marks them as being declared:
// those not DOWN, and those DOWN where tasks still run (busy: set DOWN by
// an administrator, their ends not reported yet). A node registered since
// the term began starts its silence now.
func (l *liveness) silent(nodes []*cluster.Node, now time.Time, ttl time.Duration, busy func(node string) bool) []silentNode {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []silentNode
	for _, n := range nodes {
		if n.State == cluster.NodeDown && !busy(n.Name) {
			continue
		}
		seen, ok := l.lastSeen[n.Name]
		if !ok {
			l.lastSeen[n.Name], seen = now, now
		}
		if now.Sub(seen) > ttl && !l.declaring[n.Name] {
			out = append(out, silentNode{n.Name, now.Sub(seen)})
			l.declaring[n.Name] = true
		}
	}
	return out
}

// declared ends the declaration of nodes: their DOWN applied (which keeps
// them from a lease until they register again) or failed (they are judged
// again at the next check).
func (l *liveness) declared(nodes []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range nodes {
		delete(l.declaring, n)
	}
}

// startLivenessTerm gives every node a full TTL of grace, as if it had just
// been heard from, and forgets who was heard: nothing is placed on a node
// until this leader hears from it (its heartbeat, registration or a task
// report). An election must not cause a storm of NODE_FAIL, nor place jobs
// on nodes that are gone.
func (s *Server) startLivenessTerm() {
	s.nodes.reset(s.store.Nodes(), s.cfg.Clock.Now())
}

// seen records that node was heard from at t. It reports false when this
// leader has found the node silent past the TTL and its DOWN is on its
// way: the node's tasks are about to be declared lost, and it must get no
// lease before it registers again.
func (s *Server) seen(node string, t time.Time) (live bool) {
	live, first := s.nodes.seen(node, t)
	if first {
		s.kickScheduler() // it can take jobs now
	}
	return live
}

// shuttingDown records that node's agent stops (its last heartbeat said
// so, or it reported its tasks lost as it shut down): nothing is placed on
// the node until it is heard from again, as after an election, it shows as
// not responding, and its silence counts from t.
func (s *Server) shuttingDown(node string, t time.Time) { s.nodes.stopping(node, t) }

// admitRegistration lets node register, and so have a lease again, unless
// this leader found it silent and its DOWN is on its way: a lease granted
// before the DOWN applies would let its tasks outlive their declared end.
// It also refreshes the node's silence, so that no verdict is reached
// while it registers.
func (s *Server) admitRegistration(node string, t time.Time) error {
	if !s.nodes.registering(node, t) {
		return cluster.Errorf(cluster.ErrConflict, "node %s is being declared down for its silence; register again in a moment", node)
	}
	return nil
}

// unheard returns which of the nodes this leader has not heard from yet.
func (s *Server) unheard(nodes []*cluster.Node) map[string]bool { return s.nodes.unheard(nodes) }

// checkLiveness proposes DOWN, in one command, for every UP or DRAIN node
// silent past the TTL: a rack that goes dark together costs one commit.
func (s *Server) checkLiveness(ctx context.Context) {
	now := s.cfg.Clock.Now()
	var silent []string
	for _, n := range s.nodes.silent(s.store.Nodes(), now, s.cfg.NodeTTL, s.runsTasks) {
		silent = append(silent, n.name)
		s.log.Warn("node not responding", "node", n.name, "silent", n.silentFor.Round(time.Second))
	}
	if len(silent) == 0 {
		return
	}
	_, err := s.propose(ctx, fsm.SetNodesDown{Names: silent, Reason: store.ReasonNotResponding, Time: now})
	if err != nil {
		s.log.Error("mark nodes down", "nodes", silent, "err", err)
	}
	s.nodes.declared(silent)
	s.kickScheduler()
}

// runsTasks reports whether a task of a live job on node has not ended.
func (s *Server) runsTasks(node string) bool {
	jobs, _ := s.store.NodeJobs(node)
	for _, j := range jobs {
		for _, t := range j.Tasks {
			if t.Node == node && !t.State.Ended() {
				return true
			}
		}
	}
	return false
}
