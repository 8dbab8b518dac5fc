package controller

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// RESUME (or UNDRAIN) of a node in service is Slurm's "Invalid node state
// specified", with the node and its state, and leaves it as it was: it
// was accepted in silence, and recorded a "resumed (was UP)" event. Of a
// list, the nodes out of service are resumed and the others named. A node
// UP with a health verdict held is resumed, which clears the verdict.
func TestResumeOfANodeInService(t *testing.T) {
	s := newTestServer(t, Config{Insecure: true})
	register(t, s, nil, "n1", "n2", "n3")
	ctx := context.Background()
	api := &controllerService{s: s}
	node := func(name string) *cluster.Node {
		t.Helper()
		n, err := s.store.Node(name)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	resumes := func(name string) int {
		t.Helper()
		evs, err := api.ListEvents(ctx, &phalanxv1.ListEventsRequest{Nodes: []string{name}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evs.Events {
			if e.Kind == string(cluster.EventResumed) {
				n++
			}
		}
		return n
	}
	update := func(state string, names ...string) error {
		t.Helper()
		_, err := api.UpdateNode(ctx, &phalanxv1.UpdateNodeRequest{Names: names, State: state})
		return err
	}

	before := node("n1")
	err := update("RESUME", "n1")
	if want := "Invalid node state specified: n1 is IDLE, with nothing to resume: RESUME and UNDRAIN return DOWN, DRAINING and DRAINED nodes to service"; status.Code(err) != codes.Aborted || status.Convert(err).Message() != want {
		t.Errorf("RESUME of an idle node: %v; want Aborted %q", err, want)
	}
	if n := node("n1"); n.ReasonUser != before.ReasonUser || !n.StateTime.Equal(before.StateTime) || resumes("n1") != 0 {
		t.Errorf("n1 after the refused resume: %s by %q at %v, %d resumed events; want it as it was", n.State, n.ReasonUser, n.StateTime, resumes("n1"))
	}

	if _, err := s.propose(ctx, fsm.SetNodeState{Name: "n2", State: cluster.NodeDrain, Reason: "cable", User: "alice", Time: s.cfg.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	err = update("UNDRAIN", "n1", "n2", "n3")
	if want := "Invalid node state specified: n[1,3] are IDLE, with nothing to resume: RESUME and UNDRAIN return DOWN, DRAINING and DRAINED nodes to service (n2 resumed)"; status.Code(err) != codes.Aborted || status.Convert(err).Message() != want {
		t.Errorf("UNDRAIN of n[1-3], n2 drained: %v; want Aborted %q", err, want)
	}
	if n := node("n2"); n.State != cluster.NodeUp || resumes("n2") != 1 || resumes("n1")+resumes("n3") != 0 {
		t.Errorf("after UNDRAIN of n[1-3]: n2 %s; resumed events n1 %d, n2 %d, n3 %d; want n2 UP, its event alone", n.State, resumes("n1"), resumes("n2"), resumes("n3"))
	}

	// n3 drained by an XID goes silent, and registers again: UP, with the
	// XID's verdict held until someone resumes it.
	if _, err := s.propose(ctx, fsm.SetNodeHealth{Name: "n3", Problems: "gpu-xid: GPU 2 XID 48", Time: s.cfg.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.propose(ctx, fsm.SetNodesDown{Names: []string{"n3"}, Reason: store.ReasonNotResponding, Time: s.cfg.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	register(t, s, nil, "n3")
	if n := node("n3"); n.State != cluster.NodeUp || n.Health == "" {
		t.Fatalf("n3 registered again: %s, health %q; want UP with the XID held", n.State, n.Health)
	}
	if err := update("RESUME", "n3"); err != nil {
		t.Errorf("RESUME of n3, UP with a verdict held: %v", err)
	}
	if n := node("n3"); n.State != cluster.NodeUp || n.Health != "" || resumes("n3") != 1 {
		t.Errorf("n3 after the resume: %s, health %q, %d resumed events; want UP, no verdict, one", n.State, n.Health, resumes("n3"))
	}
}
