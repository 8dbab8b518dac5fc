package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// scontrol reconfigure on three real replicas sharing one phalanx.conf:
// a partition added to the file is applied live; a change that needs a
// restart is refused and nothing applied; an administrator's partition
// change survives the leader's death while the file stays as it was.
func TestReconfigureReplicas(t *testing.T) {
	procs := startFromConfig(t)
	if _, err := procs.WaitLeader(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	conn, err := procs.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := phalanxv1.NewControllerServiceClient(conn)
	call := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	parts := func() map[string]string {
		t.Helper()
		resp, err := api.ListPartitions(call(), &phalanxv1.ListPartitionsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range resp.Partitions {
			out[p.Name] = p.State
		}
		return out
	}
	orig, err := os.ReadFile(procs.Conf)
	if err != nil {
		t.Fatal(err)
	}
	write := func(extra string) {
		if err := os.WriteFile(procs.Conf, append(slices.Clone(orig), extra...), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\nPartitionName=debug Nodes=ALL MaxTime=30 State=UP\n")
	resp, err := api.Reconfigure(call(), &phalanxv1.ReconfigureRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := parts(); got["debug"] != "UP" || got["gpu"] != "UP" {
		t.Fatalf("after reconfigure (%q): partitions %v; want gpu and debug UP", resp.Changes, got)
	}
	if !slices.Contains(resp.Changes, "partition debug added") {
		t.Errorf("changes %q; want partition debug added", resp.Changes)
	}

	write("PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\nMinJobAge=42\n")
	_, err = api.Reconfigure(call(), &phalanxv1.ReconfigureRequest{})
	if err == nil || !strings.Contains(err.Error(), "MinJobAge changed") {
		t.Errorf("reconfigure with a new MinJobAge: %v; want it refused", err)
	}
	if got := parts(); got["debug"] != "UP" {
		t.Errorf("a refused reconfigure changed the partitions: %v", got)
	}

	write("PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\nPartitionName=debug Nodes=ALL MaxTime=30 State=UP\n")
	if _, err := api.UpdatePartition(call(), &phalanxv1.UpdatePartitionRequest{Name: "debug", State: proto.String("DOWN")}); err != nil {
		t.Fatal(err)
	}
	leader := procs.Leader()
	procs.Kill(leader)
	if _, err := procs.WaitLeader(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := parts(); got["debug"] != "DOWN" {
		t.Errorf("after the leader's death: partitions %v; want debug still DOWN (an administrator's change, the file unchanged)", got)
	}
}

// scontrol reconfigure on three real replicas applies a changed NodeName
// line to a registered node through Raft and prints it: what the node
// offers is its line's (never more than its agent reported), a feature
// gone from the line goes, and a new leader keeps all of it.
func TestReconfigureNodeLine(t *testing.T) {
	bin := testcluster.BuildController(t, t.TempDir())
	// No heartbeats here: a long TTL keeps the node UP (DOWN nodes take
	// their line when they register again).
	procs := testcluster.StartProcs(t, bin, testcluster.ProcOptions{FromConfig: true, Args: []string{"--node-ttl=10m"}})
	if _, err := procs.WaitLeader(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	conn, err := procs.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := phalanxv1.NewControllerServiceClient(conn)
	call := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	orig, err := os.ReadFile(procs.Conf)
	if err != nil {
		t.Fatal(err)
	}
	reconfigure := func(line string) []string {
		t.Helper()
		if err := os.WriteFile(procs.Conf, append(slices.Clone(orig), "GresTypes=gpu\n"+line+"\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		resp, err := api.Reconfigure(call(), &phalanxv1.ReconfigureRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Changes
	}
	node := func() string {
		t.Helper()
		resp, err := api.ListNodes(call(), &phalanxv1.ListNodesRequest{Names: []string{"gpu001"}})
		if err != nil {
			t.Fatal(err)
		}
		n := resp.Nodes[0]
		return fmt.Sprintf("%s CPUTot=%d RealMemory=%d Gres=gpu:%d Features=%s S:C:T=%d:%d:%d", n.State, n.Cpus, n.MemoryMb, n.Gpus,
			strings.Join(n.Features, ","), n.Sockets, n.CoresPerSocket, n.ThreadsPerCore)
	}

	if changes := reconfigure("NodeName=gpu001 CPUs=8 Gres=gpu:h100:2 Feature=b,ib"); !slices.Contains(changes, "node gpu001 added") {
		t.Errorf("changes %q; want node gpu001 added", changes)
	}
	nconn, err := apiclient.Dial(procs.APIAddrs(), apiclient.WithDialOptions(procs.Transport(procs.Material(t, pki.KindNode, "gpu001"))))
	if err != nil {
		t.Fatal(err)
	}
	defer nconn.Close()
	if _, err := phalanxv1.NewNodeServiceClient(nconn).RegisterNode(call(), &phalanxv1.RegisterNodeRequest{
		Name: "gpu001", Addr: "10.0.0.1", Cpus: 16, MemoryMb: 64000, Gpus: 2, GpuModel: "h100",
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := node(), "IDLE CPUTot=8 RealMemory=64000 Gres=gpu:2 Features=b,ib S:C:T=0:0:0"; got != want {
		t.Errorf("registered: %s, want %s", got, want)
	}

	changes := reconfigure("NodeName=gpu001 CPUs=4 RealMemory=1000 Gres=gpu:h100:1 Feature=b Sockets=2 CoresPerSocket=1 ThreadsPerCore=2")
	if want := "node gpu001: CPUs 8 to 4, RealMemory (none) to 1000, Gres gpu:h100:2 to gpu:h100:1, Feature b,ib to b, Sockets (none) to 2, CoresPerSocket (none) to 1, ThreadsPerCore (none) to 2"; !slices.Contains(changes, want) {
		t.Errorf("changes %q; want %q", changes, want)
	}
	want := "IDLE CPUTot=4 RealMemory=1000 Gres=gpu:1 Features=b S:C:T=2:1:2"
	if got := node(); got != want {
		t.Errorf("after reconfigure: %s, want %s", got, want)
	}
	procs.Kill(procs.Leader())
	if _, err := procs.WaitLeader(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := node(); got != want {
		t.Errorf("after the leader's death: %s, want %s", got, want)
	}
}
