package scheduler

import (
	"github.com/phalanx-hpc/phalanx/cluster"
)

// unknownFeature returns a feature no node has, when every term of the
// constraint names one (so no node could ever match) or a node count names
// one; else "". The grammar is cluster.ParseConstraint's.
func unknownFeature(c cluster.Constraint, nodes []*cluster.Node) string {
	seen := map[string]bool{}
	for _, n := range nodes {
		for _, f := range n.Features {
			seen[f] = true
		}
	}
	for _, fc := range c.Counts {
		if !seen[fc.Feature] {
			return fc.Feature
		}
	}
	if len(c.Terms) == 0 {
		return ""
	}
	first := ""
	for _, term := range c.Terms {
		missing := ""
		for _, f := range term {
			if !seen[f] && missing == "" {
				missing = f
			}
		}
		if missing == "" {
			return ""
		}
		if first == "" {
			first = missing
		}
	}
	return first
}
