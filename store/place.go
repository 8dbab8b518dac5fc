package store

import (
	"fmt"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Placement is one gang the scheduler placed: the job's whole allocation,
// its MASTER_PORT, the time of the decision and how the scheduler came to
// it (By: in priority order or backfill), which the attempt records.
type Placement struct {
	Job        cluster.JobID
	Alloc      cluster.Allocation
	MasterPort int
	Time       time.Time
	By         cluster.PlacedBy
}

// PlaceJobs applies placements in order and returns the IDs placed. Each is
// re-checked against the state, including the placements before it in the
// same call: the job is still pending; every node exists, is UP and appears
// once; its GPU indices are below the node's GPU count, distinct and not held
// by a live job; its CPUs and memory fit what is free; no node is shared with
// an exclusive job. A placement that fails any check is skipped whole (a gang
// starts on all of its nodes or none); the others still apply.
func (s *Store) PlaceJobs(idx uint64, ps []Placement) ([]cluster.JobID, error) {
	var placed []cluster.JobID
	err := s.apply(idx, func(c *change) error {
		chk := &placeChecker{st: c.st, use: map[string]*nodeUse{}}
		for _, p := range ps {
			j := c.job(p.Job)
			if j == nil || j.State != cluster.JobPending || chk.check(p.Alloc, j.Exclusive) != nil {
				continue
			}
			u := j.Update()
			if err := cluster.Place(u, p.Alloc, p.MasterPort, p.Time, p.By); err != nil {
				continue // the allocation does not match the job's size
			}
			chk.take(p.Alloc, j.Exclusive)
			c.putJob(u)
			placed = append(placed, p.Job)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return placed, nil
}

// placeChecker checks placements against what live jobs hold, computed per
// node from the live-job index the first time a node is asked about.
type placeChecker struct {
	st  *state
	use map[string]*nodeUse
}

// nodeUse is what live jobs (and the placements taken so far) hold on a node.
type nodeUse struct {
	gpus  map[int]bool
	cpus  int
	mem   int64
	busy  bool // something holds part of the node
	whole bool // an exclusive job holds it
}

func (c *placeChecker) usage(node string) *nodeUse {
	if u := c.use[node]; u != nil {
		return u
	}
	u := &nodeUse{gpus: map[int]bool{}}
	for id := range c.st.liveOnNode[node] {
		j := c.st.jobs[id]
		for _, na := range j.Alloc.Nodes {
			if na.Node == node {
				u.add(na, j.Exclusive)
			}
		}
	}
	c.use[node] = u
	return u
}

func (u *nodeUse) add(na cluster.NodeAlloc, exclusive bool) {
	for _, g := range na.GPUs {
		u.gpus[g] = true
	}
	u.cpus += na.CPUs
	u.mem += na.MemoryMB
	u.busy = true
	u.whole = u.whole || exclusive
}

// check says why an allocation does not fit, or nil.
func (c *placeChecker) check(a cluster.Allocation, exclusive bool) error {
	seen := map[string]bool{}
	for _, na := range a.Nodes {
		n := c.st.nodes[na.Node]
		switch {
		case n == nil:
			return fmt.Errorf("node %q: %w", na.Node, cluster.ErrNotFound)
		case n.State != cluster.NodeUp:
			return fmt.Errorf("node %s is %s: %w", n.Name, n.State, cluster.ErrConflict)
		case seen[na.Node]:
			return fmt.Errorf("node %s allocated twice: %w", n.Name, cluster.ErrInvalid)
		}
		u := c.usage(na.Node)
		if u.whole || (exclusive && u.busy) {
			return fmt.Errorf("node %s is not shared with an exclusive job: %w", n.Name, cluster.ErrConflict)
		}
		seen[na.Node] = true
		if err := checkNode(n, u, na); err != nil {
			return err
		}
	}
	return nil
}

func checkNode(n *cluster.Node, u *nodeUse, na cluster.NodeAlloc) error {
	mine := map[int]bool{}
	for _, g := range na.GPUs {
		if g < 0 || g >= n.GPUs || u.gpus[g] || mine[g] {
			return fmt.Errorf("node %s: GPU %d is not free: %w", n.Name, g, cluster.ErrConflict)
		}
		mine[g] = true
	}
	if na.CPUs < 0 || u.cpus+na.CPUs > n.CPUs {
		return fmt.Errorf("node %s: %d CPUs do not fit (%d of %d used): %w", n.Name, na.CPUs, u.cpus, n.CPUs, cluster.ErrConflict)
	}
	if na.MemoryMB < 0 || u.mem+na.MemoryMB > n.MemoryMB {
		return fmt.Errorf("node %s: %d MB do not fit (%d of %d used): %w", n.Name, na.MemoryMB, u.mem, n.MemoryMB, cluster.ErrConflict)
	}
	return nil
}

// take records a placed allocation so later placements see it as held.
func (c *placeChecker) take(a cluster.Allocation, exclusive bool) {
	for _, na := range a.Nodes {
		c.usage(na.Node).add(na, exclusive)
	}
}
