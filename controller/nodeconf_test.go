package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
)

// With NodeName lines, the config is the cluster: declared nodes are
// listed before they register (DOWN, not responding), a node that
// reports less than its line is INVAL with Slurm's reasons and comes back
// when it reports enough, and a node no line declares is refused.
func TestDeclaredNodes(t *testing.T) {
	s := newTestServer(t, Config{Nodes: []config.NodeConf{
		{Name: "n1", CPUs: 64, MemoryMB: 512000, GPUs: 8},
		{Name: "n2", CPUs: 128, MemoryMB: 1024000, GPUs: 8},
		{Name: "n3"},
	}})
	ctx := context.Background()
	api := &controllerService{s: s}
	list := func() string {
		t.Helper()
		resp, err := api.ListNodes(ctx, &phalanxv1.ListNodesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range resp.Nodes {
			out = append(out, fmt.Sprintf("%s %s nr=%v %q", n.Name, n.State, n.NotResponding, n.Reason))
		}
		return strings.Join(out, "\n")
	}
	if got, want := list(), `n1 DOWN nr=true "Not responding"
n2 DOWN nr=true "Not responding"
n3 DOWN nr=true "Not responding"`; got != want {
		t.Errorf("before any registration:\n%s\nwant\n%s", got, want)
	}

	// A declared node that never registered has no events yet, and asking
	// for them is no error.
	if evs, err := api.ListEvents(ctx, &phalanxv1.ListEventsRequest{Nodes: []string{"n3"}}); err != nil || len(evs.Events) != 0 {
		t.Errorf("events of n3 before it registered: %v, %v", evs, err)
	}

	register(t, s, nil, "n1", "n2") // 64 CPUs, 512000 MB, 8 GPUs each
	ns := &nodeService{s: s}
	_, err := ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n3", Cpus: 8, MemoryMb: 1000, Gpus: 0})
	if err != nil {
		t.Fatal(err) // n3's line declares nothing: anything goes
	}
	if got, want := list(), `n1 IDLE nr=false ""
n2 INVAL nr=false "Low CPUs (reported:64 < configured:128), Low RealMemory (reported:512000 < configured:1024000)"
n3 IDLE nr=false ""`; got != want {
		t.Errorf("after registering:\n%s\nwant\n%s", got, want)
	}
	n2, _ := s.store.Node("n2")
	if n2.State != cluster.NodeInval || n2.ReasonUser != cluster.SystemUser {
		t.Errorf("n2 stored as %s by %q", n2.State, n2.ReasonUser)
	}

	// An INVAL node is not used, and an admin cannot resume it.
	resp, err := s.submit(ctx, testSpec(2, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	eventually(t, 10*time.Second, func() error { // considered, and not placed: n2 is INVAL, n3 has no GPU: ReqNodeNotAvail
		j, err := api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: uint64(id)})
		if err != nil || j.State != string(cluster.JobPending) || j.Reason != cluster.ReasonNodeAvail {
			return fmt.Errorf("job %v: %v", j, err)
		}
		return nil
	})
	_, err = s.updateNodes(ctx, &phalanxv1.UpdateNodeRequest{Names: []string{"n2"}, State: "RESUME"})
	if err == nil || !strings.Contains(err.Error(), "node n2 is INVAL (Low CPUs") {
		t.Errorf("RESUME of an INVAL node: %v", err)
	}

	// It comes back when it registers with what its line says, and the job
	// runs there.
	if _, err := ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n2", Cpus: 128, MemoryMb: 1024000, Gpus: 8}); err != nil {
		t.Fatal(err)
	}
	if n2, _ := s.store.Node("n2"); n2.State != cluster.NodeUp || n2.Reason != "" {
		t.Errorf("n2 after registering enough: %s %q", n2.State, n2.Reason)
	}
	eventually(t, 10*time.Second, func() error {
		if j, _ := s.store.Job(id); j.State == cluster.JobPending {
			return fmt.Errorf("job still pending (%s)", j.Reason)
		}
		return nil
	})

	_, err = ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n9", Cpus: 64, MemoryMb: 512000, Gpus: 8})
	if status.Code(toStatus(err)) != codes.PermissionDenied || !strings.Contains(err.Error(), `node "n9" is not declared in phalanx.conf`) {
		t.Errorf("undeclared node: %v", err)
	}
	if _, err := s.store.Node("n9"); err == nil {
		t.Error("the undeclared node was recorded")
	}
}
