package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Placement is one gang the scheduler placed: the job's whole allocation,
// its MASTER_PORT and the time of the decision.
type Placement struct {
	Job        cluster.JobID
	Alloc      cluster.Allocation
	MasterPort int
	Time       time.Time
}

// PlaceJobs applies placements in order and returns the IDs placed. Each is
// re-checked against the state inside the transaction, including the
// placements before it in the same call: the job is still pending; every
// node exists, is UP and appears once; its GPU indices are below the node's
// GPU count, distinct and not held by a live job; its CPUs and memory fit
// what is free; no node is shared with an exclusive job. A placement that fails any check is skipped whole (a gang
// starts on all of its nodes or none); the others still apply.
func (s *Store) PlaceJobs(idx uint64, ps []Placement) ([]cluster.JobID, error) {
	var placed []cluster.JobID
	err := s.update(idx, func(tx *bolt.Tx) error {
		placed = nil
		c, err := newPlaceChecker(tx)
		if err != nil {
			return err
		}
		for _, p := range ps {
			j := c.jobs[p.Job]
			if j == nil || j.State != cluster.JobPending || c.check(p.Alloc, j.Exclusive) != nil {
				continue
			}
			if err := cluster.Place(j, p.Alloc, p.MasterPort, p.Time); err != nil {
				continue // the allocation does not match the job's size
			}
			c.take(p.Alloc, j.Exclusive)
			if err := putJob(tx, j); err != nil {
				return err
			}
			placed = append(placed, p.Job)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return placed, nil
}

// placeChecker holds what a placement is checked against: the nodes, the
// active jobs and what live jobs hold on each node.
type placeChecker struct {
	nodes map[string]*cluster.Node
	jobs  map[cluster.JobID]*cluster.Job
	gpus  map[string]map[int]bool
	use   map[string]cluster.NodeUsage
	busy  map[string]bool // a live job holds something on the node
	whole map[string]bool // a live exclusive job holds the node
}

func newPlaceChecker(tx *bolt.Tx) (*placeChecker, error) {
	nodes, err := allNodes(tx)
	if err != nil {
		return nil, err
	}
	active, err := activeJobs(tx)
	if err != nil {
		return nil, err
	}
	c := &placeChecker{
		nodes: make(map[string]*cluster.Node, len(nodes)),
		jobs:  make(map[cluster.JobID]*cluster.Job, len(active)),
		gpus:  map[string]map[int]bool{},
		use:   cluster.Usage(active),
		busy:  map[string]bool{},
		whole: map[string]bool{},
	}
	for _, n := range nodes {
		c.nodes[n.Name] = n
	}
	for _, j := range active {
		c.jobs[j.ID] = j
		if j.Live() {
			c.mark(*j.Alloc, j.Exclusive)
		}
	}
	for name, u := range c.use {
		for _, g := range u.GPUs {
			c.heldGPUs(name)[g] = true
		}
	}
	return c, nil
}

func (c *placeChecker) heldGPUs(node string) map[int]bool {
	if c.gpus[node] == nil {
		c.gpus[node] = map[int]bool{}
	}
	return c.gpus[node]
}

// mark records the nodes an allocation occupies.
func (c *placeChecker) mark(a cluster.Allocation, exclusive bool) {
	for _, na := range a.Nodes {
		c.busy[na.Node] = true
		if exclusive {
			c.whole[na.Node] = true
		}
	}
}

// check says why an allocation does not fit, or nil.
func (c *placeChecker) check(a cluster.Allocation, exclusive bool) error {
	seen := map[string]bool{}
	for _, na := range a.Nodes {
		n := c.nodes[na.Node]
		switch {
		case n == nil:
			return fmt.Errorf("node %q: %w", na.Node, cluster.ErrNotFound)
		case n.State != cluster.NodeUp:
			return fmt.Errorf("node %s is %s: %w", n.Name, n.State, cluster.ErrConflict)
		case seen[na.Node]:
			return fmt.Errorf("node %s allocated twice: %w", n.Name, cluster.ErrInvalid)
		case c.whole[na.Node] || (exclusive && c.busy[na.Node]):
			return fmt.Errorf("node %s is not shared with an exclusive job: %w", n.Name, cluster.ErrConflict)
		}
		seen[na.Node] = true
		if err := c.checkNode(n, na); err != nil {
			return err
		}
	}
	return nil
}

func (c *placeChecker) checkNode(n *cluster.Node, na cluster.NodeAlloc) error {
	held := c.gpus[n.Name]
	mine := map[int]bool{}
	for _, g := range na.GPUs {
		if g < 0 || g >= n.GPUs || held[g] || mine[g] {
			return fmt.Errorf("node %s: GPU %d is not free: %w", n.Name, g, cluster.ErrConflict)
		}
		mine[g] = true
	}
	u := c.use[n.Name]
	if na.CPUs < 0 || u.CPUs+na.CPUs > n.CPUs {
		return fmt.Errorf("node %s: %d CPUs do not fit (%d of %d used): %w", n.Name, na.CPUs, u.CPUs, n.CPUs, cluster.ErrConflict)
	}
	if na.MemoryMB < 0 || u.MemoryMB+na.MemoryMB > n.MemoryMB {
		return fmt.Errorf("node %s: %d MB do not fit (%d of %d used): %w", n.Name, na.MemoryMB, u.MemoryMB, n.MemoryMB, cluster.ErrConflict)
	}
	return nil
}

// take records a placed allocation so later placements see it as held.
func (c *placeChecker) take(a cluster.Allocation, exclusive bool) {
	c.mark(a, exclusive)
	for _, na := range a.Nodes {
		held := c.heldGPUs(na.Node)
		for _, g := range na.GPUs {
			held[g] = true
		}
		u := c.use[na.Node]
		u.CPUs += na.CPUs
		u.MemoryMB += na.MemoryMB
		c.use[na.Node] = u
	}
}
