package cli

import (
	"context"
	"strings"
	"testing"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// sinfoFake answers ListPartitions and ListNodes from fixed data.
type sinfoFake struct {
	phalanxv1.UnimplementedControllerServiceServer
	parts []*phalanxv1.Partition
	nodes []*phalanxv1.Node
}

func (f *sinfoFake) ListPartitions(context.Context, *phalanxv1.ListPartitionsRequest) (*phalanxv1.ListPartitionsResponse, error) {
	return &phalanxv1.ListPartitionsResponse{Partitions: f.parts}, nil
}

func (f *sinfoFake) ListNodes(context.Context, *phalanxv1.ListNodesRequest) (*phalanxv1.ListNodesResponse, error) {
	return &phalanxv1.ListNodesResponse{Nodes: f.nodes}, nil
}

func TestSinfoNICs(t *testing.T) {
	ib := func(dev, state string) *phalanxv1.NICInfo {
		return &phalanxv1.NICInfo{Device: dev, Port: 1, State: state, Rate: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand"}
	}
	addr := serveFake(t, &sinfoFake{
		parts: []*phalanxv1.Partition{{Name: "gpu", Default: true, Nodes: []string{"gpu001", "gpu002", "gpu003"}}},
		nodes: []*phalanxv1.Node{
			{Name: "gpu001", State: "IDLE", Partitions: []string{"gpu"}, Nics: []*phalanxv1.NICInfo{ib("mlx5_0", "ACTIVE"), ib("mlx5_1", "ACTIVE")}},
			{Name: "gpu002", State: "IDLE", Partitions: []string{"gpu"}, Nics: []*phalanxv1.NICInfo{ib("mlx5_0", "ACTIVE"), ib("mlx5_1", "ACTIVE")}},
			{Name: "gpu003", State: "DRAINED", Reason: "rdma-link: mlx5_1/1 DOWN (Disabled)", Partitions: []string{"gpu"},
				Nics: []*phalanxv1.NICInfo{ib("mlx5_0", "ACTIVE"), ib("mlx5_1", "DOWN")}},
		},
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sinfo", "-o", "%9P %.5D %t %N %K %k"},
			"PARTITION NODES STATE NODELIST NICS(UP/TOTAL) NICS\n" +
				"gpu*          2 idle gpu[001-002] 2/2 mlx5_0/1:ACTIVE:400Gb:IB,mlx5_1/1:ACTIVE:400Gb:IB\n" +
				"gpu*          1 drain gpu003 1/2 mlx5_0/1:ACTIVE:400Gb:IB,mlx5_1/1:DOWN:400Gb:IB\n"},
		{[]string{"sinfo", "-h", "--Format=NodeList:13,NICCount:.3 ,NICsUp:"},
			"gpu[001-002]   2 2/2\n" +
				"gpu003         2 1/2\n"},
		{[]string{"sinfo", "-h", "-p", "gpu", "-o", "%P %D"}, "gpu* 3\n"},
		{[]string{"sinfo", "-h", "-t", "drain", "-o", "%P %D %t %N"}, "gpu* 1 drain gpu003\n"},
		{[]string{"sinfo", "-h", "--states=IDLE,down", "-o", "%D %t"}, "2 idle\n"},
		{[]string{"sinfo", "-s"}, "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST\n" +
			"gpu*         up   infinite          0/2/1/3 gpu[001-003]\n"},
	} {
		code, stdout, stderr := runOut(t, addr, tc.args...)
		if code != 0 || stdout != tc.want || stderr != "" {
			t.Errorf("%q: code %d, stderr %q, stdout:\n%s\nwant:\n%s", tc.args, code, stderr, stdout, tc.want)
		}
	}
}

// sinfo -p of a partition the cluster does not have is an error, not an
// empty table.
func TestSinfoUnknownPartition(t *testing.T) {
	addr := serveFake(t, &sinfoFake{parts: []*phalanxv1.Partition{{Name: "gpu"}}})
	code, stdout, stderr := runOut(t, addr, "sinfo", "-p", "nope")
	if code != 1 || stdout != "" || stderr != "sinfo: error: Invalid partition name specified: nope\n" {
		t.Errorf("sinfo -p nope: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestSinfoFormatErrors checks that a bad format fails before phx calls
// the controller (there is none here): one line naming the fields there
// are, status 1.
func TestSinfoFormatErrors(t *testing.T) {
	dead := closedAddr(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sinfo", "-O", "NodeList,Bogus:10"}, `sinfo: error: --Format: invalid field "Bogus": the fields are AllocMem, Available, `},
		{[]string{"sinfo", "-o", "%N %Q"}, "sinfo: error: --format: invalid field %Q: the fields are %a %A "},
		{[]string{"sinfo", "-N", "-o", "%N", "-O", "NICs"}, "sinfo: error: -o and -O both give the columns: use one"},
		{[]string{"sinfo", "-t", "sleepy"}, `sinfo: error: --states=sleepy: invalid node state "sleepy": use idle, mix, `},
	} {
		code, stdout, stderr := runOut(t, dead, tc.args...)
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: code %d, stdout %q, stderr %q; want 1 and one line %q...", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

func TestSinfoHelpListsFields(t *testing.T) {
	code, stdout, _ := runOut(t, closedAddr(t), "sinfo", "--help")
	for _, want := range []string{"-O, --Format=VALUE", "-o, --format=VALUE", "-l, --long", "-e, --exact", "%z  SocketCoreThread ", "%k  NICs ", "%K  NICsUp ", "    NICCount ", "%t  StateCompact "} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("sinfo --help: code %d, no %q in:\n%s", code, want, stdout)
		}
	}
}

// sinfo -e (--exact), refused before, gives nodes whose CPUs differ rows
// of their own; without it they share one that prints the least, "64+".
func TestSinfoExact(t *testing.T) {
	addr := serveFake(t, &sinfoFake{
		parts: []*phalanxv1.Partition{{Name: "gpu", Default: true, Nodes: []string{"gpu001", "gpu002"}}},
		nodes: []*phalanxv1.Node{
			{Name: "gpu001", State: "IDLE", Cpus: 64, Partitions: []string{"gpu"}},
			{Name: "gpu002", State: "IDLE", Cpus: 128, Partitions: []string{"gpu"}},
		},
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sinfo", "-h", "-o", "%c %N"}, "64+ gpu[001-002]\n"},
		{[]string{"sinfo", "-h", "-e", "-o", "%c %N"}, "64 gpu001\n128 gpu002\n"},
		{[]string{"sinfo", "-h", "--exact", "-o", "%c %N"}, "64 gpu001\n128 gpu002\n"},
	} {
		code, stdout, stderr := runOut(t, addr, tc.args...)
		if code != 0 || stdout != tc.want || stderr != "" {
			t.Errorf("%q: code %d, stderr %q, stdout:\n%s\nwant:\n%s", tc.args, code, stderr, stdout, tc.want)
		}
	}
}

// -a/--all, which in Slurm also lists hidden partitions, is taken: Phalanx
// hides none, so it changes nothing (squeue's likewise).
func TestAllIsAccepted(t *testing.T) {
	for _, args := range [][]string{{"-a"}, {"--all", "-N"}} {
		if _, err := parseSinfo(args); err != nil {
			t.Errorf("sinfo %q: %v", args, err)
		}
		if _, err := parseSqueue(args[:1]); err != nil {
			t.Errorf("squeue %q: %v", args[:1], err)
		}
	}
}

// sinfo -t comp selects the nodes a job is completing on, whether
// COMPLETING or ALLOCATED+; -t alloc selects the ALLOCATED+ one too.
func TestSinfoCompletingNodes(t *testing.T) {
	addr := serveFake(t, &sinfoFake{
		parts: []*phalanxv1.Partition{{Name: "gpu", Default: true, Nodes: []string{"gpu001", "gpu002", "gpu003"}}},
		nodes: []*phalanxv1.Node{
			{Name: "gpu001", State: "COMPLETING", Partitions: []string{"gpu"}},
			{Name: "gpu002", State: "ALLOCATED+", Partitions: []string{"gpu"}},
			{Name: "gpu003", State: "IDLE", Partitions: []string{"gpu"}},
		},
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sinfo", "-h", "-t", "comp", "-o", "%t %N"}, "alloc+ gpu002\ncomp gpu001\n"},
		{[]string{"sinfo", "-h", "-t", "COMPLETING", "-o", "%t %N"}, "alloc+ gpu002\ncomp gpu001\n"},
		{[]string{"sinfo", "-h", "-t", "alloc", "-o", "%t %N"}, "alloc+ gpu002\n"},
		{[]string{"sinfo", "-h", "-t", "idle", "-o", "%t %N"}, "idle gpu003\n"},
	} {
		code, stdout, stderr := runOut(t, addr, tc.args...)
		if code != 0 || stdout != tc.want || stderr != "" {
			t.Errorf("%q: code %d, stderr %q, stdout:\n%s\nwant:\n%s", tc.args, code, stderr, stdout, tc.want)
		}
	}
}

// sinfo -n lists only the nodes named, by name or range; a partition with
// none of them has no row, and a bad range is refused.
func TestSinfoNodes(t *testing.T) {
	addr := serveFake(t, &sinfoFake{
		parts: []*phalanxv1.Partition{
			{Name: "gpu", Default: true, Nodes: []string{"gpu001", "gpu002", "gpu003"}},
			{Name: "debug", Nodes: []string{"gpu003"}},
		},
		nodes: []*phalanxv1.Node{
			{Name: "gpu001", State: "IDLE", Partitions: []string{"gpu"}},
			{Name: "gpu002", State: "MIXED", Partitions: []string{"gpu"}},
			{Name: "gpu003", State: "IDLE", Partitions: []string{"gpu", "debug"}},
		},
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sinfo", "-h", "-n", "gpu[001-002]", "-o", "%P %t %N"}, "gpu* idle gpu001\ngpu* mix gpu002\n"},
		{[]string{"sinfo", "-h", "--nodes=gpu003", "-o", "%P %t %N"}, "gpu* idle gpu003\ndebug idle gpu003\n"},
		{[]string{"sinfo", "-h", "-N", "-n", "gpu001,gpu009", "-o", "%N %t"}, "gpu001 idle\n"},
	} {
		code, stdout, stderr := runOut(t, addr, tc.args...)
		if code != 0 || stdout != tc.want || stderr != "" {
			t.Errorf("%q: code %d, stderr %q, stdout:\n%s\nwant:\n%s", tc.args, code, stderr, stdout, tc.want)
		}
	}
	if code, _, stderr := runOut(t, addr, "sinfo", "-n", "gpu[003-001]"); code == 0 || !strings.Contains(stderr, "--nodes=gpu[003-001]") {
		t.Errorf("sinfo -n with a bad range: code %d, stderr %q", code, stderr)
	}
}
