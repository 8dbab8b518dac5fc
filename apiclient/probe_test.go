package apiclient

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// frozen answers nothing until the caller gives up: a stopped process or a
// frozen host, whose connections stay open.
func frozen(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func submit(ctx context.Context, c *Conn) (*phalanxv1.SubmitJobResponse, error) {
	return phalanxv1.NewControllerServiceClient(c).SubmitJob(ctx, &phalanxv1.SubmitJobRequest{})
}

func TestFrozenLeaderIsLeftForTheNewOne(t *testing.T) {
	t.Parallel()
	// The call goes first to the replica believed to lead, which froze; the
	// others elected a new leader. The call must go there well before the
	// frozen one's share (half the deadline) runs out.
	const deadline = 10 * time.Second
	old := &fakeController{id: "old", role: RoleLeader, answer: frozen}
	elected := &fakeController{id: "new", role: RoleLeader}
	follower := &fakeController{id: "follower", role: "Follower"}
	oldAddr, newAddr := startController(t, old), startController(t, elected)
	c, err := Dial([]string{oldAddr, startController(t, follower), newAddr}, WithLeader(oldAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	start := time.Now()
	resp, err := submit(timeout(t, deadline), c)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("submit after %v: %v; want the new leader's answer", took, err)
	}
	if old.submits.Load() != 0 || elected.submits.Load() != 1 || resp.JobId != 1 {
		t.Errorf("submits answered: frozen %d, new leader %d; want only the new leader's", old.submits.Load(), elected.submits.Load())
	}
	if share := deadline / 2; took >= share-time.Second {
		t.Errorf("answered after %v; want it well before the frozen replica's share (%v) ends", took, share)
	}
	if c.Leader() != newAddr {
		t.Errorf("believed leader %q; want the new one, %s", c.Leader(), newAddr)
	}
}

func TestSlowCallOnLiveReplicaIsNotLeft(t *testing.T) {
	t.Parallel()
	// The replica called takes longer than probeAfter to answer, but it
	// answers the probes: the call waits for it, even though another says
	// it leads (a deposed leader that has not noticed yet, or a forward).
	slow := &fakeController{id: "slow", role: "Follower", submit: func(ctx context.Context) error {
		select {
		case <-time.After(probeAfter + 3*probeEvery + probeTimeout):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	other := &fakeController{id: "other", role: RoleLeader}
	c := dial(t, startController(t, slow), startController(t, other))
	if _, err := submit(timeout(t, 10*time.Second), c); err != nil {
		t.Fatalf("submit: %v; want the slow replica's answer", err)
	}
	if slow.submits.Load() != 1 || other.submits.Load() != 0 {
		t.Errorf("submits answered: slow %d, other %d; want the slow replica's alone", slow.submits.Load(), other.submits.Load())
	}
	if slow.calls.Load() < 2 {
		t.Errorf("the slow replica was asked %d times (its submit and probes); want it probed while the call waited", slow.calls.Load())
	}
}

func TestWaitingCallsShareTheProbes(t *testing.T) {
	t.Parallel()
	// Many slow calls at once on a replica that answers: one round of
	// probes at a time serves them all, and rounds come further apart.
	const calls = 20
	hold := probeAfter + 2*time.Second
	slow := &fakeController{id: "slow", role: RoleLeader, submit: func(ctx context.Context) error {
		select {
		case <-time.After(hold):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	other := &fakeController{id: "other", role: "Follower"}
	c := dial(t, startController(t, slow), startController(t, other))
	errs := make(chan error, calls)
	for range calls {
		go func() {
			_, err := submit(timeout(t, 10*time.Second), c)
			errs <- err
		}()
	}
	for range calls {
		if err := <-errs; err != nil {
			t.Fatalf("submit: %v; want the slow replica's answer", err)
		}
	}
	// Rounds at about 1, 1.25, 1.75 and 2.75 s while the calls wait 3 s,
	// 80 probes if each call made its own: allow for calls that start
	// apart on a loaded machine (a round is reused for 100 ms only).
	if n := other.calls.Load(); n == 0 || n > 20 {
		t.Errorf("the other replica was probed %d times while %d calls waited %v; want a few rounds shared by all", n, calls, hold)
	}
}

func TestProbesCarryTheCallersCredential(t *testing.T) {
	t.Parallel()
	// A CLI server sends each user's credential in the call's metadata,
	// not with the connection: the replicas refuse probes without it.
	const key = "x-credential"
	withCredential := func(ctx context.Context) error {
		if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(key)) == 0 {
			return status.Error(codes.Unauthenticated, "no credential")
		}
		return nil
	}
	old := &fakeController{id: "old", role: RoleLeader, answer: frozen}
	elected := &fakeController{id: "new", role: RoleLeader, answer: withCredential}
	oldAddr := startController(t, old)
	c, err := Dial([]string{oldAddr, startController(t, elected)}, WithLeader(oldAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := metadata.AppendToOutgoingContext(timeout(t, 10*time.Second), key, "alice's")
	start := time.Now()
	if _, err := submit(ctx, c); err != nil || elected.submits.Load() != 1 {
		t.Fatalf("submit after %v: %v (new leader answered %d); want the new leader's answer", time.Since(start), err, elected.submits.Load())
	}
	if took := time.Since(start); took >= 4*time.Second {
		t.Errorf("answered after %v; want well before the frozen replica's share (5s) ends", took)
	}
}
