package apiclient

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// stuckLeader serves one set of assignments and then nothing, and never
// answers a unary call: a leader stopped (SIGSTOP) or cut off without its
// connections closing, after the others elected a new one.
func stuckLeader(t *testing.T) (addr string, unstick func()) {
	t.Helper()
	stuck := make(chan struct{})
	node := &fakeNode{watch: func(s grpc.ServerStreamingServer[phalanxv1.Assignments]) error {
		if err := s.Send(&phalanxv1.Assignments{}); err != nil {
			return err
		}
		<-s.Context().Done()
		return nil
	}}
	ctl := &fakeController{id: "old", answer: func(ctx context.Context) error {
		select {
		case <-ctx.Done():
		case <-stuck:
		}
		return status.Error(codes.Unavailable, "stuck")
	}}
	addr = serve(t, func(s *grpc.Server) {
		phalanxv1.RegisterNodeServiceServer(s, node)
		phalanxv1.RegisterControllerServiceServer(s, ctl)
	})
	var once bool
	return addr, func() {
		if !once {
			once = true
			close(stuck)
		}
	}
}

// newLeader answers every unary call, naming itself the leader.
func newLeader(t *testing.T) string {
	t.Helper()
	var addr string
	ctl := &fakeController{id: "new", answer: func(ctx context.Context) error {
		return grpc.SetHeader(ctx, metadata.Pairs(leaderHeader, addr))
	}}
	addr = startController(t, ctl)
	return addr
}

// A stream opened with FollowLeader on a leader that got stuck ends as
// soon as a call's answer names another leader, and the next one opens
// there. (An agent's assignment stream stayed on a stopped leader: jobs
// the new leader placed on the node stayed CONFIGURING until the old one
// was let go again.)
func TestFollowLeaderStreamEndsWhenAnotherLeads(t *testing.T) {
	t.Parallel()
	old, unstick := stuckLeader(t)
	defer unstick()
	next := newLeader(t)
	c := dial(t, old, next)
	ctx := timeout(t, 10*time.Second)

	ended := watchAfterFirst(t, ctx, c, FollowLeader())

	// A heartbeat, say: the stuck replica gets its share, the next answers.
	callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if st, err := getStatus(callCtx, c); err != nil || st.Id != "new" {
		t.Fatalf("call = %v, %v; want the new leader's answer", st, err)
	}
	select {
	case err := <-ended:
		if status.Code(err) != codes.Unavailable {
			t.Errorf("stream ended with %v; want UNAVAILABLE", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the stream on %s still waits 5s after %s was learned to lead", old, c.Leader())
	}
	if got := c.Leader(); got != next {
		t.Errorf("Leader() = %q; want %q", got, next)
	}
}

// Without FollowLeader a stream is left alone when the leader moves (a
// backup streamed from the replica that began it).
func TestStreamWithoutFollowLeaderStays(t *testing.T) {
	t.Parallel()
	old, unstick := stuckLeader(t)
	defer unstick()
	next := newLeader(t)
	c := dial(t, old, next)
	ctx := timeout(t, 10*time.Second)

	ended := watchAfterFirst(t, ctx, c)
	c.learn(next)
	select {
	case err := <-ended:
		t.Fatalf("stream ended with %v when another replica was learned to lead; want it left open", err)
	case <-time.After(300 * time.Millisecond):
	}
}

// Closing the connection ends a stream that follows the leader.
func TestFollowLeaderStreamEndsAtClose(t *testing.T) {
	t.Parallel()
	old, unstick := stuckLeader(t)
	defer unstick()
	c, err := Dial([]string{old})
	if err != nil {
		t.Fatal(err)
	}
	s, err := phalanxv1.NewNodeServiceClient(c).WatchAssignments(timeout(t, 10*time.Second), &phalanxv1.WatchAssignmentsRequest{Name: "n1"}, FollowLeader())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatalf("first message: %v", err)
	}
	c.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s.Recv()
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Recv after Close returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream still open 5s after Close")
	}
}

// watchAfterFirst opens node n1's assignment stream through c, takes its
// first message, and returns where the stream's end (the next Recv's
// error) arrives.
func watchAfterFirst(t *testing.T, ctx context.Context, c *Conn, opts ...grpc.CallOption) <-chan error {
	t.Helper()
	s, err := phalanxv1.NewNodeServiceClient(c).WatchAssignments(ctx, &phalanxv1.WatchAssignmentsRequest{Name: "n1"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatalf("first message: %v", err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := s.Recv()
		ended <- err
	}()
	return ended
}
