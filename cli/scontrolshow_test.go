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
// nodes in its order; a name no node has is Slurm's line in its place, on
// standard output as Slurm's (checked against 22.05: scontrol show node
// vm,x,vm2,y prints vm, "Node x not found", vm2, "Node y not found"),
// status 1.
func TestScontrolShowNodeList(t *testing.T) {
	var nodes []*phalanxv1.Node
	for _, name := range []string{"gpu001", "gpu002", "gpu003"} {
		nodes = append(nodes, &phalanxv1.Node{Name: name, State: "IDLE", Partitions: []string{"gpu"}})
	}
	addr := serveFake(t, &nodesFake{nodes: nodes})
	// A node's record is its name; Slurm's line for a missing one, !name.
	shown := regexp.MustCompile(`(?m)^(?:NodeName=(\S+)|Node (\S+) not found$)`)
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
		{"gpu[002,009]", 1, []string{"gpu002", "!gpu009"}, ""},
		{"gpu[009,002,008,003]", 1, []string{"!gpu009", "gpu002", "!gpu008", "gpu003"}, ""},
		{"gpu999", 1, []string{"!gpu999"}, ""},
		{"gpu[008-009]", 1, []string{"!gpu008", "!gpu009"}, ""},
		{"gpu[001-", 1, nil, `scontrol: error: hostlist "gpu[001-": unclosed '[': write a node name or a hostlist such as gpu[001-004],gpu010` + "\n"},
	} {
		args := []string{"scontrol", "show", "node"}
		if tc.list != "" {
			args = append(args, tc.list)
		}
		code, stdout, stderr := runOut(t, addr, args...)
		var got []string
		for _, m := range shown.FindAllStringSubmatch(stdout, -1) {
			if m[1] != "" {
				got = append(got, m[1])
			} else {
				got = append(got, "!"+m[2])
			}
		}
		if code != tc.code || fmt.Sprint(got) != fmt.Sprint(tc.want) || stderr != tc.stderr {
			t.Errorf("%s: code %d, nodes %v, stderr %q; want %d, %v, %q", strings.Join(args, " "), code, got, stderr, tc.code, tc.want, tc.stderr)
		}
	}
	// -o: a line each, in the same order.
	code, stdout, _ := runOut(t, addr, "scontrol", "-o", "show", "node", "gpu[009,001]")
	if lines := strings.Split(stdout, "\n"); code != 1 || len(lines) != 3 || lines[0] != "Node gpu009 not found" || !strings.HasPrefix(lines[1], "NodeName=gpu001 ") {
		t.Errorf("scontrol -o show node gpu[009,001]: code %d, %q", code, stdout)
	}
}

func (f *nodesFake) ListPartitions(context.Context, *phalanxv1.ListPartitionsRequest) (*phalanxv1.ListPartitionsResponse, error) {
	return &phalanxv1.ListPartitionsResponse{Partitions: []*phalanxv1.Partition{{Name: "gpu", Default: true}}}, nil
}

// TestScontrolShowEntityEqualsValue: scontrol show takes the entity and
// its value in one word, show job=7, show JobId=7, show node=gpu002, as
// Slurm's does, and partitionname as partition.
func TestScontrolShowEntityEqualsValue(t *testing.T) {
	_, jobs := startFake(t)
	nodes := serveFake(t, &nodesFake{nodes: []*phalanxv1.Node{{Name: "gpu001", State: "IDLE"}, {Name: "gpu002", State: "IDLE"}}})
	for _, tc := range []struct {
		addr  string
		args  []string
		first string
	}{
		{jobs, []string{"show", "job=7"}, "JobId=7 JobName=train"},
		{jobs, []string{"show", "JobId=7"}, "JobId=7 JobName=train"},
		{nodes, []string{"show", "node=gpu002"}, "NodeName=gpu002 "},
		{nodes, []string{"show", "Nodes=gpu[002-003]"}, "NodeName=gpu002 "},
		{nodes, []string{"show", "partition=gpu"}, "PartitionName=gpu"},
		{nodes, []string{"show", "PartitionName=gpu"}, "PartitionName=gpu"},
		{nodes, []string{"show", "partitionname", "gpu"}, "PartitionName=gpu"},
	} {
		code, stdout, stderr := runOut(t, tc.addr, append([]string{"scontrol"}, tc.args...)...)
		first, _, _ := strings.Cut(stdout, "\n")
		if !strings.HasPrefix(first, tc.first) || (code != 0) != strings.Contains(tc.args[1], "[") {
			t.Errorf("scontrol %q: code %d, first line %q, stderr %q; want %q", tc.args, code, first, stderr, tc.first)
		}
	}
	code, _, stderr := runOut(t, jobs, "scontrol", "show", "job=7", "8")
	if code != 1 || stderr != "scontrol: error: show job=7: give the job once, as job=VALUE or job VALUE\n" {
		t.Errorf("scontrol show job=7 8: code %d, stderr %q", code, stderr)
	}
}

// A partition that does not exist is Slurm's line on standard output, as
// Slurm 22.05's scontrol prints it, and status 1.
func TestScontrolShowPartitionNotFound(t *testing.T) {
	addr := serveFake(t, &nodesFake{nodes: []*phalanxv1.Node{{Name: "gpu001", State: "IDLE", Partitions: []string{"gpu"}}}})
	for _, args := range [][]string{{"show", "partition", "nope"}, {"show", "part", "nope"}, {"-o", "show", "PartitionName=nope"}} {
		code, stdout, stderr := runOut(t, addr, append([]string{"scontrol"}, args...)...)
		if code != 1 || stdout != "Partition nope not found\n" || stderr != "" {
			t.Errorf("scontrol %q: code %d, stdout %q, stderr %q; want 1, Slurm's line on standard output", args, code, stdout, stderr)
		}
	}
}
