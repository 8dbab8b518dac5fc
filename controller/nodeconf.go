package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// Nodes declared in the config. When phalanx.conf has NodeName lines, they
// are the cluster: a node not among them is refused at registration (a
// typo'd --name would otherwise be a node no partition holds), one that
// registers with fewer CPUs, less memory or fewer GPUs than its line says
// is INVAL (Slurm's state, with Slurm's reasons) and not used, and one
// that never registered is listed DOWN, not responding. A config with no
// NodeName lines (phx dev's) takes every node that registers.

// declared returns node name's NodeName line; ok is also true when the
// config declares no nodes at all.
func (s *Server) declared(name string) (conf config.NodeConf, found, ok bool) {
	nodes := s.conf().Nodes
	for _, c := range nodes {
		if c.Name == name {
			return c, true, true
		}
	}
	return config.NodeConf{}, false, len(nodes) == 0
}

// errUndeclared is what a node that is not in the config is told.
func errUndeclared(name string) error {
	return cluster.Errorf(cluster.ErrPermission,
		"node %q is not declared in phalanx.conf (no NodeName line names it): add a NodeName line for it, or start its agent with the --name of a declared node", name)
}

// shortfall says, in Slurm's words, what a node reported short of its
// NodeName line; "" when nothing is.
func shortfall(conf config.NodeConf, n *cluster.Node) string {
	var why []string
	if conf.CPUs > 0 && n.CPUs < conf.CPUs {
		why = append(why, fmt.Sprintf("Low CPUs (reported:%d < configured:%d)", n.CPUs, conf.CPUs))
	}
	if conf.MemoryMB > 0 && n.MemoryMB < conf.MemoryMB {
		why = append(why, fmt.Sprintf("Low RealMemory (reported:%d < configured:%d)", n.MemoryMB, conf.MemoryMB))
	}
	if conf.GPUs > 0 && n.GPUs < conf.GPUs {
		why = append(why, fmt.Sprintf("gres/gpu count reported lower than configured (%d < %d)", n.GPUs, conf.GPUs))
	}
	return strings.Join(why, ", ")
}

// withUnregistered returns registered (sorted by name) with the declared
// nodes that never registered added in order, as ListNodes shows them:
// DOWN, not responding, with what their lines say.
func (s *Server) withUnregistered(registered []*cluster.Node) []*cluster.Node {
	byName := func(n *cluster.Node, name string) int { return strings.Compare(n.Name, name) }
	var out []*cluster.Node
	for _, c := range s.conf().Nodes {
		if _, found := slices.BinarySearchFunc(registered, c.Name, byName); found {
			continue
		}
		n := &cluster.Node{Name: c.Name, Addr: c.Addr, CPUs: c.CPUs, MemoryMB: c.MemoryMB, GPUs: c.GPUs, GPUModel: c.GPUType,
			Features: c.Features, Weight: c.Weight, State: cluster.NodeDown, Reason: store.ReasonNotResponding, ReasonUser: cluster.SystemUser}
		if s.cfg.Topology != nil {
			n.Leaf = s.cfg.Topology.LeafOf(c.Name)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return registered
	}
	out = append(out, registered...)
	slices.SortFunc(out, func(a, b *cluster.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// withNodeConf returns n with what phalanx.conf says about it merged in:
// the configured Weight, and the configured Features added to those the
// agent reported. A node without a NodeName line is returned unchanged.
func (s *Server) withNodeConf(n *cluster.Node) *cluster.Node {
	for _, c := range s.conf().Nodes {
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
	if len(s.conf().Nodes) == 0 {
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
