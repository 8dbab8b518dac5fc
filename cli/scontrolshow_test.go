package cli

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// nodesFake answers ListNodes as the controller does: the nodes named, or
// every node; NotFound when none of those named exists.
type nodesFake struct {
	phalanxv1.UnimplementedControllerServiceServer
	nodes []*phalanxv1.Node
}

func (f *nodesFake) ListNodes(_ context.Context, req *phalanxv1.ListNodesRequest) (*phalanxv1.ListNodesResponse, error) {
	out := &phalanxv1.ListNodesResponse{}
	for _, n := range f.nodes {
		if len(req.Names) == 0 || slices.Contains(req.Names, n.Name) {
			out.Nodes = append(out.Nodes, n)
		}
	}
	if len(req.Names) > 0 && len(out.Nodes) == 0 {
		return nil, status.Errorf(codes.NotFound, "node %v: not found", req.Names)
	}
	return out, nil
}

// TestScontrolShowNodeList: scontrol show node takes a hostlist, as
// Slurm's does (scontrol show node $SLURM_JOB_NODELIST), and shows its
// nodes in its order; each name no node has is Slurm's line, status 1.
func TestScontrolShowNodeList(t *testing.T) {
	var nodes []*phalanxv1.Node
	for _, name := range []string{"gpu001", "gpu002", "gpu003"} {
		nodes = append(nodes, &phalanxv1.Node{Name: name, State: "IDLE", Partitions: []string{"gpu"}})
	}
	addr := serveFake(t, &nodesFake{nodes: nodes})
	shown := regexp.MustCompile(`(?m)^NodeName=(\S+)`)
	for _, tc := range []struct {
		list   string
		code   int
		want   []string
		stderr string
	}{
		{"", 0, []string{"gpu001", "gpu002", "gpu003"}, ""},
		{"gpu002", 0, []string{"gpu002"}, ""},
		{"gpu[001-002]", 0, []string{"gpu001", "gpu002"}, ""},
		{"gpu003,gpu001", 0, []string{"gpu003", "gpu001"}, ""},
		{"gpu[002,009]", 1, []string{"gpu002"}, "Node gpu009 not found\n"},
		{"gpu999", 1, nil, "Node gpu999 not found\n"},
		{"gpu[008-009]", 1, nil, "Node gpu008 not found\nNode gpu009 not found\n"},
		{"gpu[001-", 1, nil, `scontrol: error: hostlist "gpu[001-": unclosed '[': invalid request: write a node name or a hostlist such as gpu[001-004],gpu010` + "\n"},
	} {
		args := []string{"scontrol", "show", "node"}
		if tc.list != "" {
			args = append(args, tc.list)
		}
		code, stdout, stderr := runOut(t, addr, args...)
		var got []string
		for _, m := range shown.FindAllStringSubmatch(stdout, -1) {
			got = append(got, m[1])
		}
		if code != tc.code || fmt.Sprint(got) != fmt.Sprint(tc.want) || stderr != tc.stderr {
			t.Errorf("%s: code %d, nodes %v, stderr %q; want %d, %v, %q", strings.Join(args, " "), code, got, stderr, tc.code, tc.want, tc.stderr)
		}
	}
}
