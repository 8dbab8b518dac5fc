package testcluster_test

import (
	"context"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// A leader paused with its connections open (SIGSTOP: a frozen host, a
// stuck VM) holds no call for long. A call forwarded to it by a follower
// is answered NotLeader once the follower sees another elected, and the
// client goes there; a call sent to it directly leaves it once it says
// nothing and another replica says it leads. Before, either waited half
// its deadline (here 10 s) on the paused leader.
func TestPausedLeaderHoldsNoCall(t *testing.T) {
	procs := testcluster.StartProcs(t, testcluster.BuildController(t, t.TempDir()), testcluster.ProcOptions{Replicas: 3})
	l, err := procs.WaitLeader(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	addrs := procs.APIAddrs()
	follower := addrs[(l+1)%3]
	dial := func(list ...string) phalanxv1.ControllerServiceClient {
		conn, err := procs.Dial(list...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return phalanxv1.NewControllerServiceClient(conn)
	}
	// Connections made while the leader answers: the client's to it, and
	// the follower's, over which it forwards.
	direct := dial(addrs[l], follower, addrs[(l+2)%3])
	for _, api := range []phalanxv1.ControllerServiceClient{direct, dial(follower)} {
		if _, err := api.ListPartitions(ctx5(t), &phalanxv1.ListPartitionsRequest{}); err != nil {
			t.Fatalf("before the pause: %v", err)
		}
	}
	procs.Pause(l)
	defer procs.Resume(l)
	// A client that knows only the follower, and no leader yet: the
	// follower forwards its call.
	clients := map[string]phalanxv1.ControllerServiceClient{"forwarded by a follower": dial(follower), "to the leader first": direct}
	const deadline, within = 20 * time.Second, 6 * time.Second
	for name, api := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		_, err := api.ListPartitions(ctx, &phalanxv1.ListPartitionsRequest{})
		took := time.Since(start)
		cancel()
		t.Logf("%s: answered after %v", name, took)
		if err != nil {
			t.Errorf("%s, leader paused: %v after %v; want an answer from the new leader", name, err, took)
		} else if took > within {
			t.Errorf("%s, leader paused: answered after %v; want within %v (an election and the probes), not half the %v deadline", name, took, within, deadline)
		}
	}
}
