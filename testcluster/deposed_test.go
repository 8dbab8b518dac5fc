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
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake"})
	l := c.LeaderIndex()
	// The node's own certificate: with TLS, the node API takes no other.
	conn, err := grpc.NewClient(c.APIAddrs()[l], c.Transport(c.Material(t, pki.KindNode, "gpu-ghost")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	node := phalanxv1.NewNodeServiceClient(conn)
	// A node the state does not know is asked to register: here, by the
	// leader, before the test cuts it off.
	if resp, err := node.Heartbeat(ctx5(t), &phalanxv1.HeartbeatRequest{Name: "gpu-ghost"}); err != nil || !resp.GetReregister() {
		t.Fatalf("heartbeat of an unknown node to the leader: %v, %v; want register again", resp, err)
	}
	for i := range 3 {
		if i != l {
			c.StopController(i)
		}
	}
	start := time.Now()
	resp, err := node.Heartbeat(ctx5(t), &phalanxv1.HeartbeatRequest{Name: "gpu-ghost"})
	if resp.GetReregister() {
		t.Fatalf("a leader without its majority (%v after the last follower stopped) told the node to register again; want NotLeader", time.Since(start))
	}
	if err == nil {
		t.Errorf("heartbeat to a leader without its majority answered %v; want an error", resp)
	}
}
