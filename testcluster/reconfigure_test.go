package testcluster_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
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
