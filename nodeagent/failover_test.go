package nodeagent

import (
	"context"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// A leader that stops answering without closing its connections (SIGSTOP,
// a frozen host, a cut that drops packets) must not keep the node's
// assignment stream once the others have elected a new leader: on phx dev,
// a job the new leader placed while the old one was stopped stayed
// CONFIGURING until the old one was let go again. The first heartbeat the
// new leader answers moves the stream there.
func TestAssignmentsFollowTheNewLeaderWhenTheOldIsStuck(t *testing.T) {
	rt := fake.New()
	next := startFakeNodeServiceAt(t, "127.0.0.1:0")
	h := newHarness(t, rt, func(c *Config) { c.Controllers = append(c.Controllers, next.addr) })
	h.srv.leading()
	first := wireAssignment(31, t.TempDir(), script)
	h.srv.set(first)
	waitStarted(t, rt, "phx-31-0-0")
	h.srv.waitReport(t, 31, "RUNNING")

	h.srv.stick()
	next.leading()
	second := wireAssignment(32, t.TempDir(), script)
	second.Job.Alloc[0].Gpus = []int32{4, 5}
	next.set(first, second)

	// A heartbeat gives the stuck replica half its 10s deadline, then asks
	// the next one.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := rt.WaitStarted(ctx, "phx-32-0-0"); err != nil {
		_, hb, watches, _ := next.counts()
		t.Fatalf("job 32, assigned by the new leader, not started: %v (the new leader had %d heartbeats and %d streams)", err, hb, watches)
	}
	if _, exited := waitStarted(t, rt, "phx-31-0-0").Exited(); exited {
		t.Error("job 31, in both leaders' sets, was stopped")
	}
}
