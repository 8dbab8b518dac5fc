package testcluster_test

import (
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/store"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// The state's feature level rises only once every member's release knows
// it: a replica of an earlier release (here ctl0, which reports level 0)
// holds it back while it is a member, whoever leads, and its removal lets
// the leader raise it. Until then no replica records what the level turns
// on (requeue events), so replicas of both releases keep the same state.
func TestFeatureLevelWaitsForEveryMember(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake", FeatureLevels: map[int]uint64{0: 0}})
	levels := func() []uint64 {
		var out []uint64
		for i := range 3 {
			if srv := c.Controller(i); srv != nil {
				out = append(out, srv.Store().FeatureLevel())
			}
		}
		return out
	}
	if _, err := c.Client.TransferLeadership(ctx5(t), &phalanxv1.TransferLeadershipRequest{Id: "ctl1"}); err != nil {
		t.Fatal(err)
	}
	// ctl1 leads and asks the members at once, then every 2 s: over 5 s it
	// has asked at least twice.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for i, l := range levels() {
			if l != 0 {
				t.Fatalf("replica %d's state at feature level %d while ctl0, a member, reports 0", i, l)
			}
		}
	}
	if _, err := c.Client.RemoveController(ctx5(t), &phalanxv1.RemoveControllerRequest{Id: "ctl0"}); err != nil {
		t.Fatal(err)
	}
	c.StopController(0)
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := levels()
		if len(got) == 2 && got[0] == store.FeatureLevel && got[1] == store.FeatureLevel {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("feature levels %v 15 s after ctl0 left; want %d on both members", got, store.FeatureLevel)
		}
	}
}
