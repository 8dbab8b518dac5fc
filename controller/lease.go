package controller

import (
	"fmt"
	"time"
)

// Leases fence the tasks of a silent node (runtime.Fencer). A node whose
// agent fences (cluster.Node.Fences) gets a lease with every answer to its
// registrations and heartbeats: NodeLease, counted by the agent from when
// it sent the call, so it ends at most NodeLease after the leader heard
// it. The agent's runtime kills the node's tasks when the lease ends with
// no new one. The leader declares a node lost only after NodeTTL of
// silence, LeaseMargin later than any lease it granted could end: by then
// nothing of the node's attempts runs, and their jobs restart elsewhere
// (store.SetNodesDown). A new leader gives every node a full NodeTTL from
// when it took over (startLivenessTerm), which covers the leases its
// predecessor granted, up to its own step-down (Raft's LeaderLeaseTimeout,
// well under the margin).
//
// The margin covers what separates a lease's end from the tasks' death:
// the supervisors read the lease every 100 ms (runtime/process), the old
// leader may grant for up to LeaderLeaseTimeout (250 ms at most) after a
// new one was elected, and the clocks of two hosts may run at slightly
// different rates.

// maxLeaseMargin bounds LeaseMargin for long TTLs.
const maxLeaseMargin = 2 * time.Second

// minNodeTTL is the shortest NodeTTL whose margin (a quarter of it) still
// covers the supervisors' polling and a deposed leader's last grants.
const minNodeTTL = time.Second

// LeaseMargin is how long before a silent node is declared lost its lease
// has surely ended: a quarter of ttl, at most 2 s.
func LeaseMargin(ttl time.Duration) time.Duration { return min(ttl/4, maxLeaseMargin) }

// NodeLease is the lease granted to nodes that fence, for a node TTL of ttl.
func NodeLease(ttl time.Duration) time.Duration { return ttl - LeaseMargin(ttl) }

// checkLeaseTiming says what is wrong with a node TTL and heartbeat
// interval for leases: the lease must outlast two heartbeats, or a node
// that misses one would have its tasks killed.
func checkLeaseTiming(ttl, heartbeat time.Duration) error {
	if ttl < minNodeTTL {
		return fmt.Errorf("controller: NodeTTL %s is too short: give at least %s", ttl, minNodeTTL)
	}
	if lease := NodeLease(ttl); 2*heartbeat > lease {
		return fmt.Errorf("controller: HeartbeatInterval %s is too long for NodeTTL %s: a node's lease (%s) must outlast two heartbeats; give a HeartbeatInterval of at most %s or a longer NodeTTL",
			heartbeat, ttl, lease, lease/2)
	}
	return nil
}

// leaseMs is the lease granted to a node in an answer, in milliseconds: 0
// to a node that does not fence.
func (s *Server) leaseMs(fences bool) int64 {
	if !fences {
		return 0
	}
	return NodeLease(s.cfg.NodeTTL).Milliseconds()
}

// fenceExcused reports whether a task its agent reports fenced at t
// (killed when its node's lease ended) may owe that to the controllers
// rather than to its node, so that the report is proposed fenced and
// blames no node (cluster.TaskReport.Fenced).
//
// A lease that ended at t was renewed last by an answer to a call sent
// NodeLease before t, or earlier. If this leader had led since before
// then, with LeaseMargin more for the agent to find it, a leader answered
// the whole time the node could have renewed its lease: the node or its
// link was silent, and the node is at fault, as one found silent past its
// TTL is, even though it came back before that (a flapping link fences its
// job at every attempt, each on the same node). Otherwise the lease may
// have run out while no leader answered (an election, a majority of the
// controllers down) and the fence is no verdict: the node is at fault
// only if this leader finds it silent past its grace. Both add up to
// NodeTTL: the fence is excused when it came within the grace this
// leader gives every node from its term's start (startLivenessTerm).
//
// t is the agent's time for the report, capped at now (an agent's clock
// ahead of the leader's does not put its fence later). Before the first
// term (the zero time) nothing is known, and the fence is excused.
func (s *Server) fenceExcused(t, now time.Time) bool {
	if t.After(now) {
		t = now
	}
	began := s.nodes.termBegan()
	return began.IsZero() || t.Before(began.Add(s.cfg.NodeTTL))
}
