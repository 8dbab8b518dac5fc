package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
)

var sinfoOptions = []getopt.Option{
	{Long: "Node", Short: 'N', Usage: "one line per node"},
	{Long: "help", Usage: "show this help"},
	{Long: "list-reasons", Short: 'R', Usage: "why nodes are down or drained: reason, who set it, when"},
	{Long: "noheader", Short: 'h', Usage: "no header line"},
	{Long: "partition", Short: 'p', HasArg: true, Usage: "comma-separated partitions"},
}

func (k *commands) sinfo() *ucli.Command {
	return slurmCommand("sinfo", "show partitions and nodes", k.runSinfo)
}

func (k *commands) runSinfo(c *ucli.Context, args []string) error {
	vals, operands, err := getopt.Parse(sinfoOptions, args, getopt.Permute)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return fmt.Errorf("unexpected argument %q", operands[0])
	}
	var perNode, noHeader, reasons bool
	var only []string
	for _, v := range vals {
		switch v.Name {
		case "Node":
			perNode = true
		case "help":
			fmt.Fprintf(k.sys.Stdout, "Usage: sinfo [OPTIONS]\n\n%s", getopt.Usage(sinfoOptions))
			return nil
		case "noheader":
			noHeader = true
		case "list-reasons":
			reasons = true
		case "partition":
			only = splitList(v.Value)
		}
	}
	parts, nodes, err := k.clusterState(c)
	if err != nil {
		return err
	}
	if len(only) > 0 {
		parts = slices.DeleteFunc(parts, func(p *phalanxv1.Partition) bool { return !slices.Contains(only, p.Name) })
		nodes = slices.DeleteFunc(nodes, func(n *phalanxv1.Node) bool {
			return !slices.ContainsFunc(n.Partitions, func(p string) bool { return slices.Contains(only, p) })
		})
	}
	if reasons {
		fmt.Fprint(k.sys.Stdout, FormatSinfoReasons(nodes, noHeader, time.Local))
		return nil
	}
	if perNode {
		fmt.Fprint(k.sys.Stdout, FormatSinfoNodes(parts, nodes, noHeader))
		return nil
	}
	fmt.Fprint(k.sys.Stdout, FormatSinfo(parts, nodes, noHeader))
	return nil
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
