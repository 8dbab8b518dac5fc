package controller

import (
	"context"
	"slices"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
)

// withNodeConf returns n with what phalanx.conf says about it merged in:
// the configured Weight, and the configured Features added to those the
// agent reported. A node without a NodeName line is returned unchanged.
func (s *Server) withNodeConf(n *cluster.Node) *cluster.Node {
	for _, c := range s.cfg.Nodes {
		if c.Name != n.Name {
			continue
		}
		out := n.Clone()
		out.Weight = c.Weight
		for _, f := range c.Features {
			if !slices.Contains(out.Features, f) {
				out.Features = append(out.Features, f)
			}
		}
		return out
	}
	return n
}

// adoptNodeConf brings the registered nodes in line with the configured
// weights and features, for nodes that registered under an older config.
func (s *Server) adoptNodeConf(ctx context.Context) error {
	if len(s.cfg.Nodes) == 0 {
		return nil
	}
	for _, n := range s.store.Nodes() {
		if n.State == cluster.NodeDown {
			continue // registering would bring it back UP; it merges when its agent returns
		}
		merged := s.withNodeConf(n)
		if merged.Weight == n.Weight && slices.Equal(merged.Features, n.Features) {
			continue
		}
		if _, err := s.propose(ctx, fsm.RegisterNode{Node: merged}); err != nil {
			return err
		}
	}
	return nil
}
