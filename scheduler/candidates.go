package scheduler

import "github.com/phalanx-hpc/phalanx/cluster"

// candidates returns the partition's nodes a job may use at all: UP and
// with the requested GPU model, in name order.
func candidates(p *partition, r request) []*nodeCap {
	var out []*nodeCap
	for _, c := range p.members {
		if c.node.State == cluster.NodeUp && r.modelOK(c.node) {
			out = append(out, c)
		}
	}
	return out
}

// fitting keeps the nodes whose free capacity covers the request now.
func fitting(nodes []*nodeCap, r request) []*nodeCap {
	var out []*nodeCap
	for _, c := range nodes {
		if c.fits(r) {
			out = append(out, c)
		}
	}
	return out
}

// schedulable reports whether a partition starts jobs: UP, or DRAIN (which,
// as in Slurm, refuses new submissions but still runs queued jobs).
func schedulable(p *cluster.Partition) bool {
	return p.State == cluster.PartitionUp || p.State == cluster.PartitionDrain
}
