package store

import (
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
// same call: the job is still pending, and the allocation passes
// cluster.Holdings.Check (nodes UP and known, GPUs free and as many as the
// job asks, CPUs and memory that fit, exclusive jobs alone) and
// cluster.Place (a gang of the job's size). A placement that fails any
// check is skipped whole (a gang starts on all of its nodes or none); the
// others still apply.
func (s *Store) PlaceJobs(idx uint64, ps []Placement) ([]cluster.JobID, error) {
	var placed []cluster.JobID
	err := s.apply(idx, func(c *change) error {
		held := c.st.holdings()
		for _, p := range ps {
			j := c.job(p.Job)
			if j == nil || j.State != cluster.JobPending || held.Check(j, p.Alloc) != nil {
				continue
			}
			u := j.Update()
			if err := cluster.Place(u, p.Alloc, p.MasterPort, p.Time, p.By); err != nil {
				continue // the allocation does not match the job's size
			}
			held.Take(p.Alloc, j.Exclusive)
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

// holdings is what live jobs hold, per node, loaded from the live-job
// index the first time a node is asked about.
func (st *state) holdings() *cluster.Holdings {
	return cluster.NewHoldings(func(name string) *cluster.Node { return st.nodes[name] },
		func(node string, hold func(cluster.NodeAlloc, bool)) {
			for id := range st.liveOnNode[node] {
				j := st.jobs[id]
				for _, na := range j.Alloc.Nodes {
					if na.Node == node {
						hold(na, j.Exclusive)
					}
				}
			}
		})
}
