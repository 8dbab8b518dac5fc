package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// An agent that shuts down reports its tasks lost; the job restarts, but
// not on that node, whose agent is gone, until the node is heard from
// again: then it takes jobs as before.
func TestNothingPlacedOnANodeWhoseAgentShutDown(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1", "n2")
	ns := &nodeService{s: s}
	ctx := context.Background()
	for _, n := range []string{"n1", "n2"} {
		if _, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := s.submit(ctx, testSpec(1, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	j := waitState(t, s, id, cluster.JobConfiguring)
	gone := j.Tasks[0].Node
	other := map[string]string{"n1": "n2", "n2": "n1"}[gone]
	// The other node is taken: only the agent's own node is free.
	busy, err := s.submit(ctx, testSpec(1, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s, cluster.JobID(busy.JobId), cluster.JobConfiguring)

	if _, err := ns.ReportTaskStatus(ctx, &phalanxv1.ReportTaskStatusRequest{
		Node: gone, JobId: resp.JobId, Attempt: int32(j.Attempt), State: string(cluster.TaskLost),
		Message: "node agent shut down", AgentShutdown: true,
	}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, id, cluster.JobPending)
	s.schedulePass(ctx, &queueHead{}, true) // a full pass, which would place it there
	if j, _ := s.store.Job(id); j.State != cluster.JobPending {
		t.Fatalf("restarted job %s on %v while %s's agent is down; want it pending (%s is full)", j.State, j.Alloc, gone, other)
	}
	if _, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: gone}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		j, _ := s.store.Job(id)
		if j.State != cluster.JobConfiguring || j.Tasks[0].Node != gone {
			return fmt.Errorf("job %s on %v; want it placed on %s once heard from", j.State, j.Alloc, gone)
		}
		return nil
	})
}

// An idle node's agent that stops has no task to report: its last
// heartbeat says it stops. Nothing is placed there, and it shows as not
// responding, until it is heard from again.
func TestNothingPlacedOnAnIdleNodeWhoseAgentStops(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	ns := &nodeService{s: s}
	api := &controllerService{s: s}
	ctx := context.Background()
	if _, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "n1", ShuttingDown: true}); err != nil {
		t.Fatal(err)
	}
	nodes, err := api.ListNodes(ctx, &phalanxv1.ListNodesRequest{})
	if err != nil || len(nodes.Nodes) != 1 || !nodes.Nodes[0].NotResponding {
		t.Fatalf("nodes after its agent said it stops: %v, %v; want n1 not responding", nodes, err)
	}
	resp, err := s.submit(ctx, testSpec(1, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	s.schedulePass(ctx, &queueHead{}, true)
	if j, _ := s.store.Job(id); j.State != cluster.JobPending {
		t.Fatalf("job %s on %v while n1's agent is stopped; want it pending", j.State, j.Alloc)
	}
	if _, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, id, cluster.JobConfiguring)
	if nodes, err := api.ListNodes(ctx, &phalanxv1.ListNodesRequest{}); err != nil || nodes.Nodes[0].NotResponding {
		t.Errorf("nodes once heard from again: %v, %v; want n1 responding", nodes, err)
	}
}

// A new leader places nothing on a node until it hears from it, and shows
// it so: not responding. On phx dev, a node whose agent had stopped showed
// idle* until the leader changed, then idle (the new leader forgot that
// its agent stopped) while squeue said the job waited for it
// (ReqNodeNotAvail, UnavailableNodes:gpu004).
func TestNodesANewLeaderHasNotHeardFromShowNotResponding(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1", "n2")
	ns := &nodeService{s: s}
	api := &controllerService{s: s}
	ctx := context.Background()
	notResponding := func() map[string]bool {
		t.Helper()
		nodes, err := api.ListNodes(ctx, &phalanxv1.ListNodesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, n := range nodes.Nodes {
			out[n.Name] = n.NotResponding
		}
		return out
	}
	for _, n := range []string{"n1", "n2"} {
		if _, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "n2", ShuttingDown: true}); err != nil {
		t.Fatal(err)
	}
	if got := notResponding(); got["n1"] || !got["n2"] {
		t.Fatalf("not responding %v; want n2 only (its agent stopped)", got)
	}

	s.startLivenessTerm() // as a new leader does when it takes over
	if got := notResponding(); !got["n1"] || !got["n2"] {
		t.Errorf("not responding at the start of a term %v; want both (nothing is placed on them yet)", got)
	}
	if _, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	if got := notResponding(); got["n1"] || !got["n2"] {
		t.Errorf("not responding once n1 was heard from %v; want n2 only", got)
	}
}

// A node an administrator set DOWN is asked to register again once (its
// agent stops the tasks the DOWN ended), and stays DOWN when it does; its
// later heartbeats are answered as any other's. On phx dev, scontrol
// update NodeName=gpu003 State=DOWN had its agent register every second,
// each time a Raft write and a "registered ... stays DOWN" event.
func TestAdminDownNodeRegistersOnce(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	ns := &nodeService{s: s}
	ctx := context.Background()
	heartbeat := func() *phalanxv1.HeartbeatResponse {
		t.Helper()
		resp, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if heartbeat().Reregister {
		t.Fatal("a registered UP node was asked to register again")
	}
	if _, err := s.updateNodes(ctx, &phalanxv1.UpdateNodeRequest{Names: []string{"n1"}, State: "DOWN", Reason: "maintenance"}); err != nil {
		t.Fatal(err)
	}
	if !heartbeat().Reregister {
		t.Fatal("the first heartbeat after an administrator's DOWN did not ask n1 to register again")
	}
	register(t, s, nil, "n1")
	for i := range 3 {
		if heartbeat().Reregister {
			t.Fatalf("heartbeat %d after n1 registered and stayed DOWN asked it to register again", i+1)
		}
	}
	if n, _ := s.store.Node("n1"); n.State != cluster.NodeDown || n.Reason != "maintenance" {
		t.Errorf("n1 %s (%s); want DOWN (maintenance)", n.State, n.Reason)
	}
	if _, err := s.updateNodes(ctx, &phalanxv1.UpdateNodeRequest{Names: []string{"n1"}, State: "RESUME"}); err != nil {
		t.Fatal(err)
	}
	if heartbeat().Reregister {
		t.Error("n1 resumed was asked to register again")
	}
}

// Whether a DOWN node registered since it went DOWN is read from the Raft
// entries, not from the times: the leader that set it DOWN and the one
// that took its registration chose those with their own clocks. Here the
// first ran an hour ahead: by the times, the node never registered after
// its DOWN, and it was asked to register again at every heartbeat.
func TestAdminDownNodeRegistersOnceWhateverTheClocks(t *testing.T) {
	clock := &manualClock{t: time.Now()}
	s := newTestServer(t, Config{Clock: clock})
	register(t, s, nil, "n1")
	ns := &nodeService{s: s}
	ctx := context.Background()
	heartbeat := func() bool {
		t.Helper()
		resp, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Reregister
	}
	clock.Add(time.Hour)
	if _, err := s.updateNodes(ctx, &phalanxv1.UpdateNodeRequest{Names: []string{"n1"}, State: "DOWN", Reason: "maintenance"}); err != nil {
		t.Fatal(err)
	}
	clock.Add(-time.Hour)
	if !heartbeat() {
		t.Fatal("the first heartbeat after an administrator's DOWN did not ask n1 to register again")
	}
	register(t, s, nil, "n1")
	for i := range 3 {
		if heartbeat() {
			t.Fatalf("heartbeat %d after n1 registered (at an earlier time than its DOWN's, by another clock) asked it to register again", i+1)
		}
	}
}
