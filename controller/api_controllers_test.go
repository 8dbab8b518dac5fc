package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// TestMembershipChangesThatWouldMoveAMember: raft add refuses an ID that
// is a member (Raft would move it to the new address) and another ID at a
// member's address (a phantom voter); raft transfer to the leader itself
// says it leads. Each is refused before Raft is asked, and the
// configuration stays as it was.
func TestMembershipChangesThatWouldMoveAMember(t *testing.T) {
	s := newTestServer(t, Config{})
	api := &controllerService{s: s}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, addr := s.ID(), s.RaftAddr()
	api0 := "127.0.0.1:7817"
	if _, err := s.propose(ctx, fsm.SetController{Controller: store.Controller{ID: id, APIAddr: api0, RaftAddr: addr}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req  *phalanxv1.AddControllerRequest
		want string
	}{
		{&phalanxv1.AddControllerRequest{Id: id, RaftAddr: "127.0.0.1:1"},
			`controller "` + id + `" is already a member, at ` + addr + `: to move it to 127.0.0.1:1, remove it first (phx scontrol raft remove ` + id + `)`},
		{&phalanxv1.AddControllerRequest{Id: id, RaftAddr: addr}, `controller "` + id + `" is already a member, at ` + addr},
		{&phalanxv1.AddControllerRequest{Id: "ctl9", RaftAddr: addr, ApiAddr: "127.0.0.1:2"},
			addr + ` is the Raft address of member ` + id + `: give controller "ctl9" its own`},
		// Another ID at a member's API address: scontrol ping would show
		// the member twice, once as a voter that does not exist.
		{&phalanxv1.AddControllerRequest{Id: "ctl9", RaftAddr: "127.0.0.1:3", ApiAddr: api0},
			api0 + ` is the API address of member ` + id + `: give controller "ctl9" its own`},
	} {
		_, err := api.AddController(ctx, tc.req)
		if status.Code(err) != codes.Aborted || status.Convert(err).Message() != tc.want {
			t.Errorf("raft add %s %s: %v, want Aborted %q", tc.req.Id, tc.req.RaftAddr, err, tc.want)
		}
	}
	servers, err := s.members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 1 || string(servers[0].ID) != id || string(servers[0].Address) != addr {
		t.Errorf("members after the refused adds: %v, want only %s at %s", servers, id, addr)
	}
	_, err = api.TransferLeadership(ctx, &phalanxv1.TransferLeadershipRequest{Id: id})
	if want := `controller "` + id + `" already leads`; status.Code(err) != codes.Aborted || status.Convert(err).Message() != want {
		t.Errorf("raft transfer %s: %v, want Aborted %q", id, err, want)
	}
}

// raft add refuses a Raft or API address with no port that can be dialled
// (99999 was taken): the one-replica cluster counted a second voter that
// could never answer, and lost its quorum for good.
func TestAddControllerRefusesAnAddressThatCannotBeDialled(t *testing.T) {
	s := newTestServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for req, want := range map[*phalanxv1.AddControllerRequest]string{
		{Id: "ctl9", RaftAddr: "127.0.0.1:99999"}:                  `the Raft address "127.0.0.1:99999": the port is not a number from 1 to 65535: raft add ID HOST:PORT`,
		{Id: "ctl9", RaftAddr: "127.0.0.1"}:                        `the Raft address "127.0.0.1" is not HOST:PORT: raft add ID HOST:PORT`,
		{Id: "ctl9", RaftAddr: "127.0.0.1:7819", ApiAddr: "x:0"}:   `the API address "x:0": the port is not a number from 1 to 65535: raft add ID HOST:PORT API_HOST:PORT`,
		{Id: "ctl9", RaftAddr: "127.0.0.1:7819", ApiAddr: ":7817"}: `the API address ":7817" is not HOST:PORT: raft add ID HOST:PORT API_HOST:PORT`,
	} {
		_, err := (&controllerService{s: s}).AddController(ctx, req)
		if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != want {
			t.Errorf("raft add %s %s %s: %v, want InvalidArgument %q", req.Id, req.RaftAddr, req.ApiAddr, err, want)
		}
	}
	if servers, err := s.members(ctx); err != nil || len(servers) != 1 {
		t.Errorf("members after the refused adds: %v, %v; want this replica alone", servers, err)
	}
}

// scontrol raft transfer without an ID, on a cluster of one replica, says
// there is no other replica to lead; Raft's own answer was "leadership
// transfer: cannot find peer", an Internal error.
func TestTransferWithNoOtherVoter(t *testing.T) {
	s := newTestServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := (&controllerService{s: s}).TransferLeadership(ctx, &phalanxv1.TransferLeadershipRequest{})
	want := `controller "` + s.ID() + `" is the only voter: there is no other replica to lead (phx scontrol raft add one first)`
	if status.Code(err) != codes.Aborted || status.Convert(err).Message() != want {
		t.Errorf("raft transfer on one replica: %v, want Aborted %q", err, want)
	}
}

// TestReplicaOutsideTheClusterSendsClientsOn: a replica started empty and
// not yet added knows no members. Asked for the list (scontrol ping, show
// controllers), it answers NotLeader saying it is not a member, so a
// client asks the next address, instead of an empty list that reads as
// "no controller is UP"; once added, it lists the members.
func TestReplicaOutsideTheClusterSendsClientsOn(t *testing.T) {
	leader := newTestServer(t, Config{})
	waiting := replicaNotAdded(t, leader, "ctl2")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := (&controllerService{s: waiting}).ListControllers(ctx, &phalanxv1.ListControllersRequest{})
	want := "controller ctl2 is not a member of the cluster (it waits to be added with scontrol raft add, or was removed): ask another replica"
	if nl := apiclient.NotLeader(err); nl == nil || status.Code(err) != codes.Unavailable || status.Convert(err).Message() != want {
		t.Fatalf("list controllers from a replica not yet added: %v, want Unavailable with a NotLeader detail and %q", err, want)
	}
	_, err = (&controllerService{s: leader}).AddController(ctx, &phalanxv1.AddControllerRequest{Id: "ctl2", RaftAddr: waiting.RaftAddr(), ApiAddr: waiting.APIAddr()})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		out, err := (&controllerService{s: waiting}).ListControllers(ctx, &phalanxv1.ListControllersRequest{})
		if err != nil {
			return err
		}
		if len(out.Controllers) != 2 {
			return fmt.Errorf("added replica lists %v, want both members", out.Controllers)
		}
		return nil
	})
}

// TestReplicaOutsideTheClusterSaysSoToEveryCall: a replica that is not a
// member (removed, or not yet added) answers every call it would send to
// the leader, a read (sinfo) or a write (sbatch), that it is not a member,
// as it answers scontrol ping: not "no controller leads right now (an
// election is under way ...)", which sends the admin looking for an
// election that is not happening.
func TestReplicaOutsideTheClusterSaysSoToEveryCall(t *testing.T) {
	leader := newTestServer(t, Config{})
	waiting := replicaNotAdded(t, leader, "ctl2")
	api := apiClient(t, waiting)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	want := "controller ctl2 is not a member of the cluster (it waits to be added with scontrol raft add, or was removed): ask another replica"
	for name, call := range map[string]func() error{
		"list nodes": func() error { _, err := api.ListNodes(ctx, &phalanxv1.ListNodesRequest{}); return err },
		"submit": func() error {
			_, err := api.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: testSpec(1, 1)})
			return err
		},
	} {
		err := call()
		if nl := apiclient.NotLeader(err); nl == nil || status.Code(err) != codes.Unavailable || status.Convert(err).Message() != want {
			t.Errorf("%s on a replica not yet added: %v, want Unavailable with a NotLeader detail and %q", name, err, want)
		}
	}
}

// replicaNotAdded starts a replica id of leader's cluster, with an empty
// data dir and no bootstrap: it waits to be added.
func replicaNotAdded(t *testing.T, leader *Server, id string) *Server {
	t.Helper()
	s, err := New(Config{NodeID: id, DataDir: t.TempDir(), RaftAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0",
		FastRaft: true, Logger: leader.log, AuthKeys: leader.cfg.AuthKeys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
