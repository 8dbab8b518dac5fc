package scheduler

import (
	"sort"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// holding is capacity that a job holds until a known time.
type holding struct {
	end   time.Time
	nodes []cluster.NodeAlloc
}

// holdings lists what live jobs hold and until when, by their time limits;
// jobs without a limit hold forever and are left out.
func holdings(jobs []*cluster.Job) []holding {
	var out []holding
	for _, j := range jobs {
		if j.Live() && j.TimeLimit > 0 {
			out = append(out, holding{end: j.StartTime.Add(j.TimeLimit), nodes: j.Alloc.Nodes})
		}
	}
	return out
}

// expectedStart estimates when a blocked job could start: it releases the
// holdings in order of their end and returns the first end after which a
// gang fits the candidates, no earlier than now. Zero means unknown (the
// capacity it needs is held by jobs without a time limit).
func expectedStart(cands []*nodeCap, r request, held []holding, now time.Time) time.Time {
	clone := make([]*nodeCap, len(cands))
	byName := make(map[string]*nodeCap, len(cands))
	for i, c := range cands {
		cc := *c
		cc.gpus = append([]int(nil), c.gpus...)
		clone[i], byName[c.node.Name] = &cc, &cc
	}
	held = append([]holding(nil), held...)
	sort.SliceStable(held, func(i, j int) bool { return held[i].end.Before(held[j].end) })
	for i, h := range held {
		for _, a := range h.nodes {
			if c := byName[a.Node]; c != nil {
				c.release(a)
			}
		}
		if i+1 < len(held) && held[i+1].end.Equal(h.end) {
			continue // release everything ending at the same time first
		}
		if _, ok := assemble(fitting(clone, r), r.nodes); ok {
			if h.end.Before(now) {
				return now
			}
			return h.end
		}
	}
	return time.Time{}
}

// release gives an allocation's resources back to the free capacity.
func (c *nodeCap) release(a cluster.NodeAlloc) {
	c.gpus = append(c.gpus, a.GPUs...)
	sort.Ints(c.gpus)
	c.cpus += a.CPUs
	c.memoryMB += a.MemoryMB
}
