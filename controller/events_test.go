package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
)

// userClient calls s's API as user alice (uid 1000): no operator, no
// administrator.
func userClient(t *testing.T, s *Server) phalanxv1.ControllerServiceClient {
	t.Helper()
	alice := auth.Issuer(auth.Ring(testKey), auth.Identity{User: "alice", UID: 1000, GID: 1000, Kind: auth.KindLocal}, time.Hour)
	conn, err := grpc.NewClient(s.APIAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(alice))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return phalanxv1.NewControllerServiceClient(conn)
}

func eventLines(events []*phalanxv1.Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%d %s %s %s: %s\n", e.Seq, e.Node, e.Kind, e.User, e.Message)
	}
	return b.String()
}

// Registrations, an administrator's drain and a health verdict are
// events any user lists, oldest first, by node, since a time, a page at a
// time.
func TestListEvents(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1", "n2")
	ctx := context.Background()
	before := s.cfg.Clock.Now()
	if _, err := s.propose(ctx, fsm.SetNodeState{Name: "n1", State: cluster.NodeDrain, Reason: "maintenance", User: "root", Time: before}); err != nil {
		t.Fatal(err)
	}
	link := &phalanxv1.HealthProblem{Check: "rdma-link", Message: "mlx5_1/1 DOWN (Disabled)"}
	beat := func(node string) {
		t.Helper()
		if _, err := (&nodeService{s: s}).Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: node, Health: true, Problems: []*phalanxv1.HealthProblem{link}}); err != nil {
			t.Fatal(err)
		}
	}
	beat("n1")
	beat("n2")
	applied := s.store.AppliedIndex()
	beat("n1") // the same verdicts again: nothing to propose
	beat("n2")
	if s.store.AppliedIndex() != applied {
		t.Errorf("heartbeats with the same verdicts were proposed (applied index %d, was %d)", s.store.AppliedIndex(), applied)
	}
	api := userClient(t, s)
	list := func(req *phalanxv1.ListEventsRequest) *phalanxv1.ListEventsResponse {
		t.Helper()
		resp, err := api.ListEvents(ctx, req)
		if err != nil {
			t.Fatalf("ListEvents(%v): %v", req, err)
		}
		return resp
	}

	want := `1 n1 registered phalanx: 8 GPUs (a100), 0 NICs, 64 CPUs, 512000 MB
2 n2 registered phalanx: 8 GPUs (a100), 0 NICs, 64 CPUs, 512000 MB
3 n1 drained root: maintenance
4 n1 unhealthy phalanx: rdma-link: mlx5_1/1 DOWN (Disabled) (left DRAIN by root)
5 n2 drained phalanx: rdma-link: mlx5_1/1 DOWN (Disabled)
`
	if got := eventLines(list(&phalanxv1.ListEventsRequest{}).Events); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
	if got := eventLines(list(&phalanxv1.ListEventsRequest{Nodes: []string{"n2"}}).Events); !strings.HasPrefix(got, "2 n2 registered") || !strings.HasPrefix(strings.SplitN(got, "\n", 2)[1], "5 n2 drained") {
		t.Errorf("n2's events:\n%s", got)
	}
	if got := list(&phalanxv1.ListEventsRequest{Since: timestamppb.New(before)}).Events; len(got) != 3 || got[0].Seq != 3 || !got[0].Time.AsTime().Equal(before) {
		t.Errorf("events since the drain:\n%s", eventLines(got))
	}
	// Pages of two, and the token of the last page is empty.
	var seqs []uint64
	req := &phalanxv1.ListEventsRequest{PageSize: 2}
	for pages := 0; ; pages++ {
		resp := list(req)
		for _, e := range resp.Events {
			seqs = append(seqs, e.Seq)
		}
		if resp.NextPageToken == "" {
			if pages != 2 {
				t.Errorf("%d pages of 2 for 5 events", pages+1)
			}
			break
		}
		req.PageToken = resp.NextPageToken
	}
	if fmt.Sprint(seqs) != "[1 2 3 4 5]" {
		t.Errorf("events by page: %v", seqs)
	}

	for _, tc := range []struct {
		req  *phalanxv1.ListEventsRequest
		code codes.Code
		msg  string
	}{
		{&phalanxv1.ListEventsRequest{Nodes: []string{"n1", "typo"}}, codes.NotFound, "Invalid node name specified: typo"},
		{&phalanxv1.ListEventsRequest{PageToken: "x"}, codes.InvalidArgument, "page token"},
		{&phalanxv1.ListEventsRequest{PageSize: -1}, codes.InvalidArgument, "page size"},
	} {
		_, err := api.ListEvents(ctx, tc.req)
		if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ListEvents(%v): %v; want %v saying %q", tc.req, err, tc.code, tc.msg)
		}
	}
}

// The leader's janitor forgets events beyond MaxEvents, and those older
// than PurgeEventAfter.
func TestEventRetention(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Insecure: true, JanitorInterval: 20 * time.Millisecond, MaxEvents: 2}, "[2 3]"},
		{Config{Insecure: true, JanitorInterval: 20 * time.Millisecond, PurgeEventAfter: time.Nanosecond}, "[]"},
	} {
		s := newTestServer(t, tc.cfg)
		register(t, s, nil, "n1", "n2", "n3")
		eventually(t, 10*time.Second, func() error {
			resp, err := (&controllerService{s: s}).ListEvents(context.Background(), &phalanxv1.ListEventsRequest{})
			if err != nil {
				return err
			}
			var seqs []uint64
			for _, e := range resp.Events {
				seqs = append(seqs, e.Seq)
			}
			if got := fmt.Sprint(seqs); got != tc.want {
				return fmt.Errorf("events %s, want %s", got, tc.want)
			}
			return nil
		})
	}
}

// With PrivateData=jobs, a user lists only their own jobs' events (with
// every node's), however many of other users' come first, and a page
// still holds what it may; operators and administrators list all.
func TestPrivateJobEvents(t *testing.T) {
	s := newTestServer(t, Config{PrivateJobs: true, OperatorUsers: []string{"carol"}})
	register(t, s, nil, "n1")
	ctx := context.Background()
	var jobs []cluster.JobID
	for _, u := range []struct {
		user string
		uid  uint32
	}{{"bob", 1001}, {"bob", 1001}, {"bob", 1001}, {"alice", 1000}} {
		spec := testSpec(1, 0)
		spec.User, spec.Uid = u.user, int32(u.uid)
		resp, err := s.submit(ctx, spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, cluster.JobID(resp.JobId))
	}
	for _, id := range jobs {
		e := cluster.Event{Time: s.cfg.Clock.Now(), Node: "n1", Job: id, Kind: cluster.EventHang, User: cluster.SystemUser, Message: fmt.Sprintf("job %d hangs", id)}
		if _, err := s.propose(ctx, fsm.RecordEvent{Event: e}); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string, uid uint32) context.Context {
		return auth.NewContext(ctx, auth.Identity{User: user, UID: uid, GID: 100, Kind: auth.KindLocal})
	}
	api := &controllerService{s: s}
	list := func(ctx context.Context, req *phalanxv1.ListEventsRequest) string {
		t.Helper()
		var b strings.Builder
		for {
			resp, err := api.ListEvents(ctx, req)
			if err != nil {
				t.Fatalf("ListEvents(%v): %v", req, err)
			}
			for _, e := range resp.Events {
				fmt.Fprintf(&b, "%s %d;", e.Kind, e.Job)
			}
			if resp.NextPageToken == "" {
				return b.String()
			}
			req.PageToken = resp.NextPageToken
		}
	}
	alices := fmt.Sprintf("registered 0;hang %d;", jobs[3])
	for _, tc := range []struct {
		who  context.Context
		req  *phalanxv1.ListEventsRequest
		want string
	}{
		{as("alice", 1000), &phalanxv1.ListEventsRequest{}, alices},
		{as("alice", 1000), &phalanxv1.ListEventsRequest{PageSize: 1}, alices},
		{as("alice", 1000), &phalanxv1.ListEventsRequest{Jobs: []uint64{uint64(jobs[0])}}, ""},
		{as("carol", 1002), &phalanxv1.ListEventsRequest{Jobs: []uint64{uint64(jobs[0])}}, fmt.Sprintf("hang %d;", jobs[0])},
		{ctx, &phalanxv1.ListEventsRequest{}, fmt.Sprintf("registered 0;hang %d;hang %d;hang %d;hang %d;", jobs[0], jobs[1], jobs[2], jobs[3])},
	} {
		if got := list(tc.who, tc.req); got != tc.want {
			t.Errorf("ListEvents(%v): %s; want %s", tc.req, got, tc.want)
		}
	}
}
