package testcluster_test

import (
	"testing"
	"time"

	"google.golang.org/grpc"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// A leader that has lost its majority and not noticed yet (paused, cut
// off) tells no agent to register again: that answer makes an agent stop
// every task, and such a leader, resumed after a pause, finds every node
// silent. It first asks a majority whether it still leads, and answers
// NotLeader: the agent goes on to the real leader. The heartbeat here
// comes within the lease the leader keeps after its last contact with the
// others (LeaderLeaseTimeout), while it still takes itself for the leader.
func TestDeposedLeaderAsksNoNodeToRegisterAgain(t *testing.T) {
	node, cutOff := nodeOfLeader(t)
	// A node the state does not know is asked to register: here, by the
	// leader, before the test cuts it off.
	if resp, err := node.Heartbeat(ctx5(t), &phalanxv1.HeartbeatRequest{Name: "gpu-ghost"}); err != nil || !resp.GetReregister() {
		t.Fatalf("heartbeat of an unknown node to the leader: %v, %v; want register again", resp, err)
	}
	cutOff()
	start := time.Now()
	resp, err := node.Heartbeat(ctx5(t), &phalanxv1.HeartbeatRequest{Name: "gpu-ghost"})
	if resp.GetReregister() {
		t.Fatalf("a leader without its majority (%v after the last follower stopped) told the node to register again; want NotLeader", time.Since(start))
	}
	if err == nil {
		t.Errorf("heartbeat to a leader without its majority answered %v; want an error", resp)
	}
}

// Nor does it send an agent what to run: its state may be older than the
// real leader's, and an agent stops the tasks a set leaves out (one the
// new leader placed meanwhile). It asks a majority before the first set of
// a stream; later sets need no asking, since a deposed leader commits
// nothing new.
func TestDeposedLeaderSendsNoAssignments(t *testing.T) {
	node, cutOff := nodeOfLeader(t)
	watch := func() (*phalanxv1.Assignments, error) {
		stream, err := node.WatchAssignments(ctx5(t), &phalanxv1.WatchAssignmentsRequest{Name: "gpu-ghost"})
		if err != nil {
			return nil, err
		}
		return stream.Recv()
	}
	if set, err := watch(); err != nil {
		t.Fatalf("assignments of a node from the leader: %v, %v; want its (empty) set", set, err)
	}
	cutOff()
	start := time.Now()
	if set, err := watch(); err == nil {
		t.Fatalf("a leader without its majority (%v after the last follower stopped) sent a node its assignments %v; want NotLeader", time.Since(start), set)
	}
}

// nodeOfLeader starts 3 controllers and returns the node API of the
// leader, as node gpu-ghost (unknown to the state) calls it, and a
// function that stops the two followers.
func nodeOfLeader(t *testing.T) (phalanxv1.NodeServiceClient, func()) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake"})
	l := c.LeaderIndex()
	// The node's own certificate: with TLS, the node API takes no other.
	conn, err := grpc.NewClient(c.APIAddrs()[l], c.Transport(c.Material(t, pki.KindNode, "gpu-ghost")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return phalanxv1.NewNodeServiceClient(conn), func() {
		for i := range 3 {
			if i != l {
				c.StopController(i)
			}
		}
	}
}
