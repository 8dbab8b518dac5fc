package controller

import (
	"context"
	"errors"
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
//
// What a registered node offers is what its agent reported with its line
// applied (withLine), as Slurm schedules slurm.conf's values: the line's
// CPUs, RealMemory and Gres GPU count when it gives them (a node that
// reports more offers no more), what the agent reported otherwise (a line
// without Gres keeps the GPUs found); the agent's features and the line's;
// the line's Weight. The store keeps only that result, so what an agent
// reported is known from it alone: never less than the node offers, and
// exactly that unless the line capped it (see exactly).

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

// nodeLines are the config's NodeName lines by node.
func (s *Server) nodeLines() map[string]config.NodeConf {
	nodes := s.conf().Nodes
	out := make(map[string]config.NodeConf, len(nodes))
	for _, c := range nodes {
		out[c.Name] = c
	}
	return out
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

// amounts are what a node offers, or a NodeName line gives, of each
// resource a line may cap: CPUs, RealMemory (MB), Gres GPU count. Zero on
// a line: not given.
type amounts [3]int64

// amountKeys name the amounts as a NodeName line does.
var amountKeys = [3]string{"CPUs", "RealMemory", "Gres gpu count"}

func nodeAmounts(n *cluster.Node) amounts {
	return amounts{int64(n.CPUs), n.MemoryMB, int64(n.GPUs)}
}

func lineAmounts(c config.NodeConf) amounts {
	return amounts{int64(c.CPUs), c.MemoryMB, int64(c.GPUs)}
}

func (a amounts) setNode(n *cluster.Node) {
	n.CPUs, n.MemoryMB, n.GPUs = int(a[0]), a[1], int(a[2])
}

func (a amounts) setLine(c *config.NodeConf) {
	c.CPUs, c.MemoryMB, c.GPUs = int(a[0]), a[1], int(a[2])
}

// withLine returns n, recorded under NodeName line was (or a registration:
// n as its agent reported it, and was the zero line), with line now
// applied instead: what it offers, its features, its Weight, and INVAL
// when it has less than now gives. undecided lists the amounts that n
// alone cannot tell (their line raised or dropped a cap n was held to): n
// keeps offering what it did until its agent registers again.
func withLine(n *cluster.Node, was, now config.NodeConf) (out *cluster.Node, undecided []string) {
	out = n.Clone()
	have, wasA, nowA := nodeAmounts(n), lineAmounts(was), lineAmounts(now)
	checked := now // the line, less what is undecided
	var next amounts
	for i := range have {
		switch {
		case nowA[i] > 0 && have[i] >= nowA[i]:
			next[i] = nowA[i]
		case exactly(n, i, wasA[i]):
			next[i] = have[i]
		default:
			next[i], nowA[i] = have[i], 0
			undecided = append(undecided, amountKeys[i])
		}
	}
	next.setNode(out)
	nowA.setLine(&checked)
	out.Weight = now.Weight
	out.Features = reported(n.Features, was.Features)
	for _, f := range now.Features {
		if !slices.Contains(out.Features, f) {
			out.Features = append(out.Features, f)
		}
	}
	switch why := shortfall(checked, out); {
	case n.State != "" && n.State != cluster.NodeUp && n.State != cluster.NodeInval:
		// Drained, or set DOWN: it stays so (store.RegisterNode).
	case why != "":
		out.State, out.Reason = cluster.NodeInval, why
	case n.State == cluster.NodeInval:
		out.State, out.Reason = cluster.NodeUp, ""
	}
	return out, undecided
}

// exactly reports whether node n, recorded under a line giving line (0:
// none) of amount i, offers exactly what its agent reported of it: when
// the line gave none, when n offers more (a node recorded before lines
// capped), or less and n is INVAL for it (one offering less that is not
// INVAL was held to an older, lower line).
func exactly(n *cluster.Node, i int, line int64) bool {
	have := nodeAmounts(n)[i]
	return line == 0 || have > line || (have < line && n.State == cluster.NodeInval)
}

// reported is what an agent reported of features have, recorded under a
// line listing line: those not on the line (one on both is taken as the
// line's; its agent gives it back when it registers again).
func reported(have, line []string) []string {
	var out []string
	for _, f := range have {
		if !slices.Contains(line, f) {
			out = append(out, f)
		}
	}
	return out
}

// applyNodeLines brings the registered nodes to the config's NodeName
// lines, from was, the lines they were recorded under. A node DOWN is left
// as it is: it registers again to come back, and its line applies then.
// It returns, a line each, what it changed (a node's state) and what must
// wait for an agent to register again.
func (s *Server) applyNodeLines(ctx context.Context, was []config.NodeConf) ([]string, error) {
	var out []string
	for _, now := range s.conf().Nodes {
		n, err := s.store.Node(now.Name)
		switch {
		case errors.Is(err, cluster.ErrNotFound):
			continue // never registered: listed as its line says
		case err != nil:
			return out, err
		case n.State == cluster.NodeDown:
			continue
		}
		prev := config.NodeConf{Name: now.Name}
		if i := slices.IndexFunc(was, func(c config.NodeConf) bool { return c.Name == now.Name }); i >= 0 {
			prev = was[i]
		}
		next, undecided := withLine(n, prev, now)
		for _, key := range undecided {
			out = append(out, waiting(n, now, key))
		}
		if sameOffer(n, next) {
			continue
		}
		if _, err := s.propose(ctx, fsm.RegisterNode{Node: next}); err != nil {
			return out, err
		}
		out = append(out, stateChange(n, next)...)
	}
	return out, nil
}

// waiting says that amount key of node n's line now waits for its agent.
func waiting(n *cluster.Node, now config.NodeConf, key string) string {
	i := slices.Index(amountKeys[:], key)
	want := "as its agent reports"
	if v := lineAmounts(now)[i]; v > 0 {
		want = fmt.Sprint(v)
	}
	return fmt.Sprintf("node %s: %s %s applies when its agent registers again (restart its phalanx-agent); until then it offers %d, what the controllers know it has",
		n.Name, amountKeys[i], want, nodeAmounts(n)[i])
}

// sameOffer reports whether a and b offer the same, alike in state.
func sameOffer(a, b *cluster.Node) bool {
	return nodeAmounts(a) == nodeAmounts(b) && a.Weight == b.Weight && slices.Equal(a.Features, b.Features) &&
		a.State == b.State && a.Reason == b.Reason
}

// stateChange says how a node's line changed its state, if it did.
func stateChange(was, now *cluster.Node) []string {
	switch {
	case now.State == cluster.NodeInval && (was.State != cluster.NodeInval || was.Reason != now.Reason):
		return []string{fmt.Sprintf("node %s INVAL, not used: %s", now.Name, now.Reason)}
	case was.State == cluster.NodeInval && now.State != cluster.NodeInval:
		return []string{fmt.Sprintf("node %s is no longer INVAL", now.Name)}
	}
	return nil
}

// adoptNodeConf brings the registered nodes in line with the config's
// NodeName lines on a new leader, taking them as recorded under the same
// lines (every controller reads the same file): it applies what lowers
// what a node offers, and its features and weight; what would raise it
// waits for the node's agent to register again.
func (s *Server) adoptNodeConf(ctx context.Context) error {
	pending, err := s.applyNodeLines(ctx, s.conf().Nodes)
	for _, p := range pending {
		s.log.Info("node config", "change", p)
	}
	return err
}
