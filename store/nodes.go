package store

import (
	"fmt"
	"slices"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// ReasonNotResponding is the reason the controller gives a node it declares
// DOWN for missing heartbeats; such a node comes back UP when it registers.
const ReasonNotResponding = "Not responding"

// RegisterNode records what an agent reported about its host: hardware,
// address, leaf switch and registration time replace what was stored. A new
// node is UP; a node DOWN because it was not responding comes back UP; a
// DRAIN node, or one an admin set DOWN, keeps its state. Its health
// checks' verdict is kept until its agent reports again. Every
// registration is an event; a node recorded again with the same
// registration time (the leader merging phalanx.conf's weight and
// features into it) is none.
func (s *Store) RegisterNode(idx uint64, n *cluster.Node) error {
	return s.apply(idx, func(c *change) error {
		if n == nil || n.Name == "" {
			return fmt.Errorf("register node: a name is required: %w", cluster.ErrInvalid)
		}
		old := c.st.nodes[n.Name]
		u := n.Clone()
		// A drain or a DOWN someone set (an admin, a health check) stays,
		// whatever the registration says; otherwise the node is UP, or INVAL
		// when the registration says so (controller/nodeconf.go).
		kept := old != nil && old.State != cluster.NodeUp && old.State != cluster.NodeInval &&
			!(old.State == cluster.NodeDown && old.Reason == ReasonNotResponding)
		switch {
		case kept:
			u.State, u.Reason, u.ReasonUser, u.StateTime = old.State, old.Reason, old.ReasonUser, old.StateTime
		case n.State == cluster.NodeInval:
			u.ReasonUser, u.StateTime = cluster.SystemUser, n.Registered
		default:
			u.State, u.Reason, u.ReasonUser, u.StateTime = cluster.NodeUp, "", "", n.Registered
		}
		u.Health = ""
		if old != nil {
			u.Health = old.Health
		}
		u.RegisteredIndex = c.idx
		c.putNode(u)
		if old == nil || !u.Registered.Equal(old.Registered) {
			c.event(cluster.RegisteredEvent(old, u))
		}
		return nil
	})
}

// SetNodeState sets a node's stored state (UP, DOWN or DRAIN), its reason
// and who gave it (user), and records the event. DOWN ends the attempt of
// every live job on the node in the same command, NODE_FAIL: on a node
// that fences, its tasks there end when reported, and the job may restart
// (cluster.NodeDowned); on one that does not, they are LOST at once and
// the job does not restart (cluster.NodeLost, unfenced). UP also clears the verdict of its
// health checks: a node returned to service starts afresh, and its
// agent's next report drains it again if a check still fails.
func (s *Store) SetNodeState(idx uint64, name string, st cluster.NodeState, reason, user string, t time.Time) error {
	return s.apply(idx, func(c *change) error {
		switch st {
		case cluster.NodeUp, cluster.NodeDown, cluster.NodeDrain:
		default:
			return fmt.Errorf("node %s: state %q: use UP, DOWN or DRAIN: %w", name, st, cluster.ErrInvalid)
		}
		n := c.st.nodes[name]
		if n == nil {
			return fmt.Errorf("node %q: %w", name, cluster.ErrNotFound)
		}
		if n.State == cluster.NodeInval && st == cluster.NodeUp {
			return fmt.Errorf("node %s is INVAL (%s): it returns to service when it registers with what its NodeName line declares: %w", name, n.Reason, cluster.ErrConflict)
		}
		u := n.Clone()
		u.State, u.Reason, u.ReasonUser, u.StateTime = st, reason, user, t
		if st == cluster.NodeUp {
			u.Health = ""
		}
		c.putNode(u)
		c.event(cluster.StateEvent(n, u, user))
		switch {
		case st == cluster.NodeDown && n.Fences:
			// Set by hand: its tasks stop and are reported, or fenced.
			c.downNode(name, t, reason)
		case st == cluster.NodeDown:
			// Set by hand, with the node maybe still running its tasks.
			c.loseNodes([]string{name}, t, reason, false)
		}
		return nil
	})
}

// SetNodesDown marks several nodes DOWN at once (a rack or a switch that
// went silent together), each with its event. Unknown names and nodes
// already DOWN are skipped, but for the tasks still there of one an
// administrator set DOWN that fences: they are lost, fenced. The nodes were
// silent past their TTL: the tasks of those that fence
// (cluster.Node.Fences) have stopped, and their jobs may restart
// elsewhere.
func (s *Store) SetNodesDown(idx uint64, names []string, reason string, t time.Time) error {
	return s.apply(idx, func(c *change) error {
		var lost, fenced []string
		for _, name := range names {
			n := c.st.nodes[name]
			if n != nil && n.State == cluster.NodeDown && n.Fences {
				// Set DOWN by hand, its tasks since fenced.
				fenced = append(fenced, name)
			}
			if n == nil || n.State == cluster.NodeDown {
				continue
			}
			u := n.Clone()
			u.State, u.Reason, u.ReasonUser, u.StateTime = cluster.NodeDown, reason, cluster.SystemUser, t
			c.putNode(u)
			c.event(cluster.StateEvent(n, u, cluster.SystemUser))
			if n.Fences {
				fenced = append(fenced, name)
			} else {
				lost = append(lost, name)
			}
		}
		c.loseNodes(fenced, t, reason, true)
		c.loseNodes(lost, t, reason, false)
		return nil
	})
}

// SetNodeHealth records the verdict of a node's health checks, problems
// (empty: they all pass), given at time t: it drains or resumes the node
// as cluster.SetHealth says, with the event. A verdict that changes
// nothing records nothing.
func (s *Store) SetNodeHealth(idx uint64, name, problems string, t time.Time) error {
	return s.apply(idx, func(c *change) error {
		n := c.st.nodes[name]
		if n == nil {
			return fmt.Errorf("node %q: %w", name, cluster.ErrNotFound)
		}
		u, e, changed := cluster.SetHealth(n, problems, t)
		if !changed {
			return nil
		}
		c.putNode(u)
		c.event(e)
		return nil
	})
}

// downNode ends the attempt of every live job with a task on the node an
// administrator set DOWN (cluster.NodeDowned), in ID order.
func (c *change) downNode(name string, t time.Time, reason string) {
	var ids []cluster.JobID
	for id := range c.st.liveOnNode[name] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if u := c.st.jobs[id].Update(); cluster.NodeDowned(u, name, t, reason) {
			c.putJob(u)
		}
	}
}

// loseNodes ends the lost nodes' part of every live job on them
// (cluster.NodeLost, with fenced), each job once, in ID order.
func (c *change) loseNodes(names []string, t time.Time, reason string, fenced bool) {
	var ids []cluster.JobID
	for _, name := range names {
		for id := range c.st.liveOnNode[name] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for _, id := range ids {
		u := c.st.jobs[id].Update()
		changed := false
		for _, name := range names {
			if cluster.NodeLost(u, name, t, reason, fenced) {
				changed = true
			}
		}
		if changed {
			c.putJob(u)
		}
	}
}

// SetPartitions replaces every partition; their order is kept. A
// configDigest other than "" records that they are the config file's, as
// PartitionsConfig returns it. Names must
// be non-empty and distinct.
func (s *Store) SetPartitions(idx uint64, ps []*cluster.Partition, configDigest string) error {
	return s.apply(idx, func(c *change) error {
		seen := map[string]bool{}
		for _, p := range ps {
			if p == nil || p.Name == "" || seen[p.Name] {
				return fmt.Errorf("set partitions: every partition needs a distinct name: %w", cluster.ErrInvalid)
			}
			seen[p.Name] = true
		}
		parts := make([]*cluster.Partition, len(ps))
		for i, p := range ps {
			parts[i] = p.Clone()
		}
		c.st.parts = parts
		c.st.configVersion++
		c.ops = append(c.ops, partitionsOp{ps: parts})
		if configDigest != "" {
			c.st.partsConfig = configDigest
			c.ops = append(c.ops, partsConfigOp{digest: configDigest})
		}
		return nil
	})
}
