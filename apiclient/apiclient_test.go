package apiclient

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// The tests run real gRPC servers on 127.0.0.1 (fake replicas whose answers
// each test chooses) and call them through a Conn.

// fakeController is a controller replica that answers GetControllerStatus
// with its id and role, or with the error answer returns.
type fakeController struct {
	phalanxv1.UnimplementedControllerServiceServer
	id      string
	role    string
	calls   atomic.Int32
	submits atomic.Int32
	// answer, when set, runs first; a non-nil error is the reply.
	answer func(ctx context.Context) error
	// submit, when set, runs instead of answer for SubmitJob.
	submit func(ctx context.Context) error
}

func (f *fakeController) GetControllerStatus(ctx context.Context, _ *phalanxv1.GetControllerStatusRequest) (*phalanxv1.ControllerStatus, error) {
	f.calls.Add(1)
	if f.answer != nil {
		if err := f.answer(ctx); err != nil {
			return nil, err
		}
	}
	return &phalanxv1.ControllerStatus{Id: f.id, Role: f.role}, nil
}

// SubmitJob is a write, answered like GetControllerStatus unless submit
// is set; the job ID is the number of submits this replica answered.
func (f *fakeController) SubmitJob(ctx context.Context, _ *phalanxv1.SubmitJobRequest) (*phalanxv1.SubmitJobResponse, error) {
	f.calls.Add(1)
	answer := f.answer
	if f.submit != nil {
		answer = f.submit
	}
	if answer != nil {
		if err := answer(ctx); err != nil {
			return nil, err
		}
	}
	return &phalanxv1.SubmitJobResponse{JobId: uint64(f.submits.Add(1))}, nil
}

// fakeNode serves WatchAssignments with watch.
type fakeNode struct {
	phalanxv1.UnimplementedNodeServiceServer
	watches atomic.Int32
	watch   func(grpc.ServerStreamingServer[phalanxv1.Assignments]) error
}

func (f *fakeNode) WatchAssignments(_ *phalanxv1.WatchAssignmentsRequest, s grpc.ServerStreamingServer[phalanxv1.Assignments]) error {
	f.watches.Add(1)
	return f.watch(s)
}

// serve starts a gRPC server on a free local port and returns its address.
func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func startController(t *testing.T, f *fakeController) string {
	return serve(t, func(s *grpc.Server) { phalanxv1.RegisterControllerServiceServer(s, f) })
}

// deadAddr returns a local address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// silentAddr returns the address of a listener that accepts connections
// and never says a word; accepted gets a value per connection.
func silentAddr(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	acc := make(chan struct{}, 16)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case acc <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return lis.Addr().String(), acc
}

func dial(t *testing.T, addrs ...string) *Conn {
	t.Helper()
	c, err := Dial(addrs)
	if err != nil {
		t.Fatalf("Dial(%v): %v", addrs, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func getStatus(ctx context.Context, c *Conn) (*phalanxv1.ControllerStatus, error) {
	return phalanxv1.NewControllerServiceClient(c).GetControllerStatus(ctx, &phalanxv1.GetControllerStatusRequest{})
}

// notLeader is a replica's answer when leaderAddr leads ("": election).
func notLeader(t *testing.T, leaderAddr string) error {
	t.Helper()
	st, err := status.New(codes.Unavailable, "not the leader").WithDetails(&phalanxv1.NotLeader{LeaderId: "ctl", LeaderAddr: leaderAddr})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestDialAddsDefaultPort(t *testing.T) {
	c, err := Dial([]string{" ctl1 ", "", "10.0.0.1:9", "::1", "[::2]"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ctl1:7817", "10.0.0.1:9", "[::1]:7817", "[::2]:7817"}
	if got := c.Addrs(); !slices.Equal(got, want) {
		t.Errorf("Addrs() = %q; want %q", got, want)
	}
	if _, err := Dial([]string{" ", ""}); err == nil {
		t.Error("Dial with no address succeeded; want an error")
	}
	if got, want := SplitAddrs(" a, ,b:1,"), []string{"a", "b:1"}; !slices.Equal(got, want) {
		t.Errorf("SplitAddrs = %q; want %q", got, want)
	}
}

func TestDeadReplicaFailsOver(t *testing.T) {
	t.Parallel()
	live := &fakeController{id: "live"}
	c := dial(t, deadAddr(t), startController(t, live))
	st, err := getStatus(timeout(t, 5*time.Second), c)
	if err != nil {
		t.Fatalf("call with a dead first replica: %v; want the live one's answer", err)
	}
	if st.Id != "live" {
		t.Errorf("answered by %q; want live", st.Id)
	}
}

func TestNotLeaderIsFollowed(t *testing.T) {
	t.Parallel()
	leader := &fakeController{id: "leader"}
	leaderAddr := startController(t, leader)
	nl := notLeader(t, leaderAddr)
	follower := &fakeController{id: "follower", answer: func(context.Context) error { return nl }}
	c := dial(t, startController(t, follower)) // the leader is not in the list

	for i := range 2 {
		st, err := getStatus(timeout(t, 5*time.Second), c)
		if err != nil {
			t.Fatalf("call %d: %v; want the leader's answer", i, err)
		}
		if st.Id != "leader" {
			t.Errorf("call %d answered by %q; want leader", i, st.Id)
		}
		if got := c.Leader(); got != leaderAddr {
			t.Errorf("after call %d Leader() = %q; want %q from NotLeader", i, got, leaderAddr)
		}
	}
	if n := follower.calls.Load(); n != 1 {
		t.Errorf("follower called %d times; want 1 (the second call goes to the known leader)", n)
	}
	if n := leader.calls.Load(); n != 2 {
		t.Errorf("leader called %d times; want 2", n)
	}
}

func TestLeaderHeaderIsLearned(t *testing.T) {
	t.Parallel()
	leader := &fakeController{id: "leader"}
	leaderAddr := startController(t, leader)
	follower := &fakeController{id: "follower", answer: func(ctx context.Context) error {
		return grpc.SetHeader(ctx, metadata.Pairs(leaderHeader, leaderAddr))
	}}
	c := dial(t, startController(t, follower))

	st, err := getStatus(timeout(t, 5*time.Second), c)
	if err != nil || st.Id != "follower" {
		t.Fatalf("first call = %v, %v; want the follower's answer", st, err)
	}
	if got := c.Leader(); got != leaderAddr {
		t.Fatalf("Leader() = %q; want %q from the %s header", got, leaderAddr, leaderHeader)
	}
	st, err = getStatus(timeout(t, 5*time.Second), c)
	if err != nil || st.Id != "leader" {
		t.Errorf("second call = %v, %v; want the leader's answer", st, err)
	}
}

func TestSlowReplicaGetsItsShare(t *testing.T) {
	t.Parallel()
	// Each slow replica is tried first and must be left after its share of
	// the deadline (minAttempt here), leaving time for the live one.
	const deadline = 2 * time.Second
	slowCases := map[string]func(t *testing.T) (addr string, tried <-chan struct{}){
		"handler never answers": func(t *testing.T) (string, <-chan struct{}) {
			tried := make(chan struct{}, 1)
			f := &fakeController{answer: func(ctx context.Context) error {
				select {
				case tried <- struct{}{}:
				default:
				}
				<-ctx.Done() // until the client gives up, or the server stops
				return ctx.Err()
			}}
			return startController(t, f), tried
		},
		"listener never speaks HTTP/2": silentAddr,
	}
	for name, slow := range slowCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			slowAddr, tried := slow(t)
			c := dial(t, slowAddr, startController(t, &fakeController{id: "live"}))
			start := time.Now()
			st, err := getStatus(timeout(t, deadline), c)
			if err != nil {
				t.Fatalf("call after %v: %v; want the live replica's answer within the %v deadline", time.Since(start), err, deadline)
			}
			if st.Id != "live" {
				t.Errorf("answered by %q; want live", st.Id)
			}
			select {
			case <-tried:
			default:
				t.Error("the slow replica was never tried; want it tried first")
			}
		})
	}
}

func TestAllRefusedGivesUpAfterGrace(t *testing.T) {
	t.Parallel()
	c := dial(t, deadAddr(t), deadAddr(t))
	start := time.Now()
	_, err := getStatus(timeout(t, 30*time.Second), c)
	took := time.Since(start)
	if code := status.Code(err); code != codes.Unavailable {
		t.Errorf("error %v has code %v; want Unavailable", err, code)
	}
	if took < refusedGrace || took > 2*refusedGrace {
		t.Errorf("gave up after %v; want about refusedGrace (%v), well before the 30s deadline", took, refusedGrace)
	}
}

// TestNotMembersGiveUpAfterGrace: replicas outside the cluster (not yet
// added, or removed) that know no leader are refusals, not an election:
// with nothing else to ask, the call gives up after refusedGrace with
// their answer, not at its deadline.
func TestNotMembersGiveUpAfterGrace(t *testing.T) {
	t.Parallel()
	st, err := status.New(codes.Unavailable, "controller ctl4 is not a member of the cluster").WithDetails(&phalanxv1.NotLeader{NotMember: true})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeController{answer: func(context.Context) error { return st.Err() }}
	c := dial(t, startController(t, f), deadAddr(t))
	start := time.Now()
	_, err = getStatus(timeout(t, 30*time.Second), c)
	took := time.Since(start)
	if nl := NotLeader(err); nl == nil || !nl.NotMember {
		t.Errorf("error %v; want the replica's not-a-member answer", err)
	}
	if took < refusedGrace || took > 2*refusedGrace {
		t.Errorf("gave up after %v; want about refusedGrace (%v), well before the 30s deadline", took, refusedGrace)
	}
}

func TestElectionRetriesUntilDeadline(t *testing.T) {
	t.Parallel()
	// Past refusedGrace: replicas that answer are retried to the deadline.
	election := notLeader(t, "")
	var replicas []*fakeController
	var addrs []string
	for range 2 {
		f := &fakeController{answer: func(context.Context) error { return election }}
		replicas = append(replicas, f)
		addrs = append(addrs, startController(t, f))
	}
	c := dial(t, addrs...)
	ctx := timeout(t, refusedGrace+500*time.Millisecond)
	deadline, _ := ctx.Deadline()
	_, err := getStatus(ctx, c)
	if now := time.Now(); now.Before(deadline) {
		t.Errorf("gave up %v before the deadline; want retries until it", deadline.Sub(now))
	}
	// The deadline ends either a wait between rounds (the last answer,
	// NotLeader) or an attempt (DeadlineExceeded).
	if code := status.Code(err); code != codes.Unavailable && code != codes.DeadlineExceeded {
		t.Errorf("error %v has code %v; want Unavailable or DeadlineExceeded", err, code)
	}
	for i, f := range replicas {
		if n := f.calls.Load(); n < 3 {
			t.Errorf("replica %d called %d times; want several rounds", i, n)
		}
	}
	if l := c.Leader(); l != "" {
		t.Errorf("Leader() = %q during an election; want empty", l)
	}
}

// TestNoLeaderIsSaidOverUnreachable: with one replica answering that no
// one leads and the others down, a read that runs out of time reports the
// answer (an election, no majority), not a replica it could not reach.
func TestNoLeaderIsSaidOverUnreachable(t *testing.T) {
	t.Parallel()
	election := notLeader(t, "")
	f := &fakeController{answer: func(context.Context) error { return election }}
	c := dial(t, startController(t, f), deadAddr(t), deadAddr(t))
	_, err := getStatus(timeout(t, 1500*time.Millisecond), c)
	if NotLeader(err) == nil {
		t.Errorf("error %v; want the replica's NotLeader answer", err)
	}
}

func TestElectionEndsDuringCall(t *testing.T) {
	t.Parallel()
	election := notLeader(t, "")
	elected := make(chan struct{})
	f := &fakeController{id: "new leader", answer: func(context.Context) error {
		select {
		case <-elected:
			return nil
		default:
			return election
		}
	}}
	c := dial(t, startController(t, f))
	const electionTime = 300 * time.Millisecond
	timer := time.AfterFunc(electionTime, func() { close(elected) })
	t.Cleanup(func() { timer.Stop() })

	start := time.Now()
	st, err := getStatus(timeout(t, 5*time.Second), c)
	if err != nil {
		t.Fatalf("call across an election: %v; want the new leader's answer", err)
	}
	if st.Id != "new leader" {
		t.Errorf("answered by %q; want new leader", st.Id)
	}
	if took := time.Since(start); took < electionTime {
		t.Errorf("answered after %v, before the election ended (%v)", took, electionTime)
	}
	if n := f.calls.Load(); n < 2 {
		t.Errorf("replica called %d times; want retries during the election", n)
	}
}

func TestNonRetryableErrorReturnedAtOnce(t *testing.T) {
	t.Parallel()
	bad := &fakeController{answer: func(context.Context) error {
		return status.Error(codes.InvalidArgument, "bad request")
	}}
	good := &fakeController{id: "good"}
	c := dial(t, startController(t, bad), startController(t, good))
	_, err := getStatus(timeout(t, 5*time.Second), c)
	if code := status.Code(err); code != codes.InvalidArgument {
		t.Errorf("error %v has code %v; want InvalidArgument, as the replica said", err, code)
	}
	if n := bad.calls.Load(); n != 1 {
		t.Errorf("first replica called %d times; want 1", n)
	}
	if n := good.calls.Load(); n != 0 {
		t.Errorf("second replica called %d times; want 0 (the error is not retryable)", n)
	}
}

// A replica that refuses the caller's credential (its cluster key or CA
// differs from the others', as after a rotation that missed one host)
// does not speak for the cluster: the others are asked in the same sweep.
func TestRefusedCredentialTriesTheOthers(t *testing.T) {
	t.Parallel()
	refusing := &fakeController{answer: func(context.Context) error {
		return status.Error(codes.Unauthenticated, "invalid token")
	}}
	good := &fakeController{id: "good"}
	c := dial(t, startController(t, refusing), startController(t, good))
	st, err := getStatus(timeout(t, 5*time.Second), c)
	if err != nil {
		t.Fatalf("GetControllerStatus: %v; want the second replica's answer", err)
	}
	if st.GetId() != "good" {
		t.Errorf("answered by %q; want good", st.GetId())
	}
	if n := refusing.calls.Load(); n != 1 {
		t.Errorf("refusing replica called %d times; want 1", n)
	}
}

// When every replica refuses the credential, that refusal is the answer,
// at once: no backoff, no waiting out the deadline.
func TestCredentialRefusedByAllReturnedAfterOneSweep(t *testing.T) {
	t.Parallel()
	var replicas []*fakeController
	var addrs []string
	for range 3 {
		f := &fakeController{answer: func(context.Context) error {
			return status.Error(codes.Unauthenticated, "invalid token")
		}}
		replicas = append(replicas, f)
		addrs = append(addrs, startController(t, f))
	}
	c := dial(t, addrs...)
	start := time.Now()
	_, err := getStatus(timeout(t, 5*time.Second), c)
	if code := status.Code(err); code != codes.Unauthenticated {
		t.Errorf("error %v has code %v; want Unauthenticated, as the replicas said", err, code)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("gave up after %v; want one sweep, well under the 5 s deadline", took)
	}
	for i, f := range replicas {
		if n := f.calls.Load(); n != 1 {
			t.Errorf("replica %d called %d times; want 1", i, n)
		}
	}
}

// A refusal does not cut an election short: the others are asked again
// until one leads.
func TestCredentialRefusedDuringElectionWaitsForTheLeader(t *testing.T) {
	t.Parallel()
	refusing := &fakeController{answer: func(context.Context) error {
		return status.Error(codes.Unauthenticated, "invalid token")
	}}
	electedAt := time.Now().Add(300 * time.Millisecond)
	electing := &fakeController{id: "elected"}
	electing.answer = func(context.Context) error {
		if time.Now().Before(electedAt) {
			return notLeader(t, "")
		}
		return nil
	}
	c := dial(t, startController(t, refusing), startController(t, electing))
	st, err := getStatus(timeout(t, 5*time.Second), c)
	if err != nil {
		t.Fatalf("GetControllerStatus: %v; want the elected replica's answer", err)
	}
	if st.GetId() != "elected" {
		t.Errorf("answered by %q; want elected", st.GetId())
	}
	if n := refusing.calls.Load(); n != 1 {
		t.Errorf("refusing replica called %d times; want 1 (its refusal holds for the call)", n)
	}
}

// A replica that names a leader which refuses the credential: the leader is
// asked once, and its refusal is the answer (no redirect loop).
func TestRefusingLeaderIsAskedOnce(t *testing.T) {
	t.Parallel()
	leader := &fakeController{answer: func(context.Context) error {
		return status.Error(codes.Unauthenticated, "invalid token")
	}}
	leaderAddr := startController(t, leader)
	follower := &fakeController{}
	follower.answer = func(context.Context) error { return notLeader(t, leaderAddr) }
	c := dial(t, startController(t, follower))
	_, err := getStatus(timeout(t, 5*time.Second), c)
	if code := status.Code(err); code != codes.Unauthenticated {
		t.Errorf("error %v has code %v; want Unauthenticated, the leader's answer", err, code)
	}
	if n := leader.calls.Load(); n != 1 {
		t.Errorf("leader called %d times; want 1", n)
	}
}

func TestStreamLearnsLeader(t *testing.T) {
	t.Parallel()
	leader := &fakeNode{watch: func(s grpc.ServerStreamingServer[phalanxv1.Assignments]) error {
		return s.Send(&phalanxv1.Assignments{Assignments: []*phalanxv1.Assignment{{JobId: 7}}})
	}}
	leaderAddr := serve(t, func(s *grpc.Server) { phalanxv1.RegisterNodeServiceServer(s, leader) })
	nl := notLeader(t, leaderAddr)
	follower := &fakeNode{watch: func(grpc.ServerStreamingServer[phalanxv1.Assignments]) error { return nl }}
	c := dial(t, serve(t, func(s *grpc.Server) { phalanxv1.RegisterNodeServiceServer(s, follower) }))
	client := phalanxv1.NewNodeServiceClient(c)
	ctx := timeout(t, 5*time.Second)

	s1, err := client.WatchAssignments(ctx, &phalanxv1.WatchAssignmentsRequest{Name: "n1"})
	if err != nil {
		t.Fatalf("first WatchAssignments: %v", err)
	}
	if _, err := s1.Recv(); NotLeader(err) == nil {
		t.Fatalf("first stream's Recv: %v; want the follower's NotLeader", err)
	}
	if got := c.Leader(); got != leaderAddr {
		t.Fatalf("Leader() = %q after a NotLeader on the stream; want %q", got, leaderAddr)
	}

	s2, err := client.WatchAssignments(ctx, &phalanxv1.WatchAssignmentsRequest{Name: "n1"})
	if err != nil {
		t.Fatalf("second WatchAssignments: %v", err)
	}
	got, err := s2.Recv()
	if err != nil {
		t.Fatalf("second stream's Recv: %v; want the leader's assignments", err)
	}
	if len(got.Assignments) != 1 || got.Assignments[0].JobId != 7 {
		t.Errorf("second stream got %v; want job 7 from the leader", got)
	}
	if n := follower.watches.Load(); n != 1 {
		t.Errorf("follower watched %d times; want 1", n)
	}
	if n := leader.watches.Load(); n != 1 {
		t.Errorf("leader watched %d times; want 1", n)
	}
}

func TestStaleSendsReadHeader(t *testing.T) {
	t.Parallel()
	reads := make(chan []string, 2)
	f := &fakeController{answer: func(ctx context.Context) error {
		md, _ := metadata.FromIncomingContext(ctx)
		reads <- md.Get(readHeader)
		return nil
	}}
	c := dial(t, startController(t, f))
	ctx := timeout(t, 5*time.Second)

	if _, err := getStatus(Stale(ctx), c); err != nil {
		t.Fatal(err)
	}
	if got := <-reads; !slices.Equal(got, []string{"stale"}) {
		t.Errorf("stale read sent %s=%q; want [stale]", readHeader, got)
	}
	if _, err := getStatus(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := <-reads; len(got) != 0 {
		t.Errorf("plain read sent %s=%q; want none", readHeader, got)
	}
}

func TestClosedConnFailsAtOnce(t *testing.T) {
	t.Parallel()
	node := &fakeNode{watch: func(grpc.ServerStreamingServer[phalanxv1.Assignments]) error { return nil }}
	addr := serve(t, func(s *grpc.Server) {
		phalanxv1.RegisterControllerServiceServer(s, &fakeController{})
		phalanxv1.RegisterNodeServiceServer(s, node)
	})
	c := dial(t, addr)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := timeout(t, 30*time.Second)
	start := time.Now()
	_, err := getStatus(ctx, c)
	if code := status.Code(err); code != codes.Canceled {
		t.Errorf("call on a closed Conn: %v has code %v; want Canceled", err, code)
	}
	_, err = phalanxv1.NewNodeServiceClient(c).WatchAssignments(ctx, &phalanxv1.WatchAssignmentsRequest{})
	if code := status.Code(err); code != codes.Canceled {
		t.Errorf("stream on a closed Conn: %v has code %v; want Canceled", err, code)
	}
	if took := time.Since(start); took > refusedGrace/4 {
		t.Errorf("calls on a closed Conn took %v; want an error at once, without retries", took)
	}
}

// When the deadline cuts an attempt short, a read reports what the
// replicas said before (no leader), which says more than the deadline; a
// write reports the deadline, since the attempt cut short may have taken
// effect.
func TestDeadlineDuringAnAttempt(t *testing.T) {
	t.Parallel()
	f := &fakeController{}
	f.answer = func(ctx context.Context) error {
		if f.calls.Load() == 1 {
			return notLeader(t, "") // an election: retried
		}
		<-ctx.Done() // the next attempt runs into the deadline
		return ctx.Err()
	}
	c := dial(t, startController(t, f))
	_, err := getStatus(timeout(t, 500*time.Millisecond), c)
	if NotLeader(err) == nil {
		t.Errorf("read cut by the deadline after a NotLeader: %v; want the NotLeader", err)
	}
	f.calls.Store(0)
	_, err = phalanxv1.NewControllerServiceClient(c).SubmitJob(timeout(t, 500*time.Millisecond), &phalanxv1.SubmitJobRequest{})
	if cut := status.Code(err) == codes.DeadlineExceeded || errors.Is(err, errSlow); !cut || f.calls.Load() < 2 {
		t.Errorf("write cut by the deadline after %d attempts: %v; want the deadline, not an earlier answer", f.calls.Load(), err)
	}
}

// A leader hint sends the first call there, not to the first address; one
// naming no controller of the list is ignored.
func TestLeaderHintGoesFirst(t *testing.T) {
	t.Parallel()
	first := &fakeController{id: "first"}
	hinted := &fakeController{id: "hinted"}
	firstAddr, hintedAddr := startController(t, first), startController(t, hinted)
	c, err := Dial([]string{firstAddr, hintedAddr}, WithLeader(hintedAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st, err := getStatus(timeout(t, 5*time.Second), c); err != nil || st.Id != "hinted" {
		t.Fatalf("first call = %v, %v; want the hinted replica's answer", st, err)
	}
	if n := first.calls.Load(); n != 0 {
		t.Errorf("the first address got %d calls; want none", n)
	}
	other, err := Dial([]string{firstAddr}, WithLeader("elsewhere:7817"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got := other.Leader(); got != "" {
		t.Errorf("a hint outside the list was taken: Leader() = %q", got)
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// After Reset the next call dials a new connection (a renewed certificate
// reaches the server), and the Conn goes on working.
func TestResetDialsAgain(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := &countingListener{Listener: inner}
	srv := grpc.NewServer()
	phalanxv1.RegisterControllerServiceServer(srv, &fakeController{id: "one"})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	c := dial(t, lis.Addr().String())
	for i := 0; i < 2; i++ {
		if _, err := getStatus(timeout(t, 5*time.Second), c); err != nil {
			t.Fatal(err)
		}
	}
	if n := lis.accepted.Load(); n != 1 {
		t.Fatalf("%d connections before Reset; want 1", n)
	}
	c.Reset()
	if _, err := getStatus(timeout(t, 5*time.Second), c); err != nil {
		t.Fatalf("a call after Reset: %v", err)
	}
	if n := lis.accepted.Load(); n != 2 {
		t.Errorf("%d connections after Reset; want 2", n)
	}
}
