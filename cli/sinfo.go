package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

var sinfoOptions = []getopt.Option{
	{Long: "all", Short: 'a', Usage: "every partition (Phalanx hides none: no effect)"},
	{Long: "Format", Short: 'O', HasArg: true, Usage: "fields by name, NAME[:[.][WIDTH][SUFFIX]],..., e.g. \"NodeList:20,StateCompact:8,NICsUp:8,NICs:0\""},
	{Long: "Node", Short: 'N', Usage: "one line per node"},
	{Long: "exact", Short: 'e', Usage: "a row only for nodes whose CPUs, memory, weight... are equal too (default: the least, with +, e.g. 64+)"},
	{Long: "format", Short: 'o', HasArg: true, Usage: "fields by letter, e.g. \"%9P %.6t %N %k\""},
	{Long: "help", Usage: "show this help"},
	{Long: "list-reasons", Short: 'R', Usage: "why nodes are down or drained: reason, who set it, when"},
	{Long: "long", Short: 'l', Usage: "the date, then Slurm's long layout: long node states, job size, root, oversubscribe, groups (-N: S:C:T, disk, weight, features, reason)"},
	{Long: "noheader", Short: 'h', Usage: "no header line"},
	{Long: "nodes", Short: 'n', HasArg: true, Usage: "only these nodes: names or ranges, comma-separated, e.g. gpu[001-004],gpu010"},
	{Long: "partition", Short: 'p', HasArg: true, Usage: "comma-separated partitions"},
	{Long: "summarize", Short: 's', Usage: "one line per partition: nodes allocated/idle/other/total"},
	{Long: "states", Short: 't', HasArg: true, Usage: "only nodes in these states: idle, mix, alloc, comp, drain, drng, down, inval (or long names), comma-separated"},
	versionOption,
}

func (k *commands) sinfo() *ucli.Command {
	return slurmCommand("sinfo", "show partitions and nodes", k.runSinfo)
}

// sinfoQuery is a parsed sinfo command line.
type sinfoQuery struct {
	view   SinfoView
	only   []string // -p
	nodes  []string // -n, expanded
	states []string // -t, lower case
	help   bool
}

func parseSinfo(args []string) (*sinfoQuery, error) {
	vals, operands, err := getopt.Parse(sinfoOptions, args, getopt.Permute)
	if err != nil {
		return nil, err
	}
	if len(operands) > 0 {
		return nil, fmt.Errorf("unexpected argument %q", operands[0])
	}
	q := &sinfoQuery{}
	for _, v := range vals {
		switch v.Name {
		case "Format":
			q.view.LongFormat = v.Value
		case "Node":
			q.view.Node = true
		case "exact":
			q.view.Exact = true
		case "format":
			q.view.Format = v.Value
		case "help":
			q.help = true
		case "list-reasons":
			q.view.Reasons = true
		case "long":
			q.view.Long = true
		case "noheader":
			q.view.NoHeader = true
		case "nodes":
			names, err := hostlist.Expand(v.Value)
			if err != nil {
				return nil, fmt.Errorf("--nodes=%s: %w", v.Value, hostlistError(err))
			}
			q.nodes = append(q.nodes, names...)
		case "partition":
			q.only = splitList(v.Value)
		case "summarize":
			q.view.Format = orDefault(q.view.Format, SinfoSummarizeFormat)
		case "states":
			for _, st := range splitList(v.Value) {
				st = strings.ToLower(st)
				if !slices.Contains(sinfoStates, st) {
					return nil, fmt.Errorf("--states=%s: invalid node state %q: use %s", v.Value, st, strings.Join(sinfoStates, ", "))
				}
				q.states = append(q.states, st)
			}
		}
	}
	if _, err := q.view.columns(); err != nil {
		return nil, err
	}
	return q, nil
}

func (k *commands) runSinfo(c *ucli.Context, args []string) error {
	if versionAsked(sinfoOptions, args, getopt.Permute) {
		return k.printVersion()
	}
	q, err := parseSinfo(args)
	if err != nil {
		return err
	}
	if q.help {
		fmt.Fprintf(k.sys.Stdout, "Usage: sinfo [OPTIONS]\n\n%s%s", getopt.Usage(sinfoOptions), sinfoFieldHelp())
		return nil
	}
	parts, nodes, err := k.clusterState(c)
	if err != nil {
		return err
	}
	if len(q.nodes) > 0 { // as Slurm's: names it does not know select nothing
		nodes = slices.DeleteFunc(nodes, func(n *phalanxv1.Node) bool { return !slices.Contains(q.nodes, n.Name) })
	}
	if len(q.states) > 0 {
		nodes = slices.DeleteFunc(nodes, func(n *phalanxv1.Node) bool {
			return !slices.ContainsFunc(nodeStateNames(n.State), func(s string) bool { return slices.Contains(q.states, s) })
		})
	}
	if len(q.only) > 0 {
		if err := knownPartitions(q.only, parts); err != nil {
			return err
		}
		parts, nodes = onlyPartitions(parts, nodes, q.only)
	}
	if len(q.nodes) > 0 || len(q.states) > 0 { // a partition none of whose nodes is left has no row
		parts = slices.DeleteFunc(parts, func(p *phalanxv1.Partition) bool {
			return !slices.ContainsFunc(nodes, func(n *phalanxv1.Node) bool { return slices.Contains(n.Partitions, p.Name) })
		})
	}
	q.view.Now, q.view.Loc = k.sys.Now(), k.loc()
	out, err := FormatSinfo(parts, nodes, q.view)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(k.sys.Stdout, out)
	return err
}

// SinfoSummarizeFormat is sinfo -s's, Slurm's.
const SinfoSummarizeFormat = "%9P %.5a %.10l %.16F %N"

// sinfoStates are the node states sinfo -t takes, short and long.
var sinfoStates = []string{"idle", "mix", "mixed", "alloc", "allocated", "comp", "completing", "drng", "draining", "drain", "drained", "down", "inval"}

// nodeStateNames are the names sinfo -t selects a node in state by: its
// long and short names, and for ALLOCATED+ (allocated, a job completing)
// both allocated and completing ones.
func nodeStateNames(state string) []string {
	if base, ok := strings.CutSuffix(state, "+"); ok {
		return append(nodeStateNames(base), "comp", "completing")
	}
	return []string{strings.ToLower(state), ShortNodeState(state)}
}

// knownPartitions refuses a partition name the cluster does not have, as
// Slurm's squeue and sinfo do, instead of printing an empty table.
func knownPartitions(names []string, parts []*phalanxv1.Partition) error {
	for _, n := range names {
		if !slices.ContainsFunc(parts, func(p *phalanxv1.Partition) bool { return p.Name == n }) {
			return &rawError{msg: fmt.Sprintf("%s: error: Invalid partition name specified: %s", "sinfo", n)}
		}
	}
	return nil
}

// onlyPartitions keeps the partitions named and their nodes, each node
// listing only those of its partitions (sinfo -N -p prints a row per node
// in them, as Slurm's).
func onlyPartitions(parts []*phalanxv1.Partition, nodes []*phalanxv1.Node, only []string) ([]*phalanxv1.Partition, []*phalanxv1.Node) {
	keep := func(p string) bool { return slices.Contains(only, p) }
	parts = slices.DeleteFunc(parts, func(p *phalanxv1.Partition) bool { return !keep(p.Name) })
	nodes = slices.DeleteFunc(nodes, func(n *phalanxv1.Node) bool { return !slices.ContainsFunc(n.Partitions, keep) })
	for _, n := range nodes {
		n.Partitions = slices.DeleteFunc(slices.Clone(n.Partitions), func(p string) bool { return !keep(p) })
	}
	return parts, nodes
}

// clusterState fetches every partition and node.
func (k *commands) clusterState(c *ucli.Context) ([]*phalanxv1.Partition, []*phalanxv1.Node, error) {
	cn, err := k.dial(c)
	if err != nil {
		return nil, nil, err
	}
	defer cn.Close()
	var parts *phalanxv1.ListPartitionsResponse
	err = cn.call(c.Context, func(ctx context.Context) (err error) {
		parts, err = cn.api.ListPartitions(ctx, &phalanxv1.ListPartitionsRequest{})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	nodes, err := cn.listNodes(c.Context, &phalanxv1.ListNodesRequest{})
	if err != nil {
		return nil, nil, err
	}
	return parts.Partitions, nodes, nil
}
