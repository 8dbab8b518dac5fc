package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// A node whose agent reports a failing check is drained by the system,
// with the checks' messages as reason, and resumed when they pass; a node
// an administrator drained keeps the administrator's reason either way.
func TestHealthDrainsAndResumes(t *testing.T) {
	s := newTestServer(t, Config{Insecure: true})
	register(t, s, nil, "n1")
	ns := &nodeService{s: s}
	ctx := context.Background()
	beat := func(problems ...*phalanxv1.HealthProblem) {
		t.Helper()
		resp, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "n1", Health: true, Problems: problems})
		if err != nil || resp.Reregister {
			t.Fatalf("heartbeat: %v, %v", resp, err)
		}
	}
	node := func() *cluster.Node {
		t.Helper()
		n, err := s.store.Node("n1")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	expect := func(st cluster.NodeState, reason, user string) {
		t.Helper()
		if n := node(); n.State != st || n.Reason != reason || n.ReasonUser != user {
			t.Fatalf("node %s %q by %q, want %s %q by %q", n.Name, n.Reason, n.ReasonUser, st, reason, user)
		}
	}
	link := &phalanxv1.HealthProblem{Check: "rdma-link", Message: "mlx5_1/1 DOWN (Disabled)"}
	beat()
	expect(cluster.NodeUp, "", "")
	beat(link)
	expect(cluster.NodeDrain, "rdma-link: mlx5_1/1 DOWN (Disabled)", cluster.SystemUser)
	ecc := &phalanxv1.HealthProblem{Check: "gpu-ecc", Message: "GPU 3 uncorrectable"}
	beat(link, ecc)
	expect(cluster.NodeDrain, "rdma-link: mlx5_1/1 DOWN (Disabled); gpu-ecc: GPU 3 uncorrectable", cluster.SystemUser)
	beat()
	expect(cluster.NodeUp, "", cluster.SystemUser)

	// An administrator's drain is theirs to lift.
	if _, err := s.propose(ctx, fsm.SetNodeState{Name: "n1", State: cluster.NodeDrain, Reason: "maintenance", User: "alice", Time: s.cfg.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	beat(link)
	expect(cluster.NodeDrain, "maintenance", "alice")
	beat()
	expect(cluster.NodeDrain, "maintenance", "alice")

	// An agent that does not check health (health unset) changes nothing.
	if _, err := s.propose(ctx, fsm.SetNodeState{Name: "n1", State: cluster.NodeDrain, Reason: "rdma-link: x", User: cluster.SystemUser, Time: s.cfg.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	expect(cluster.NodeDrain, "rdma-link: x", cluster.SystemUser)
}

// An event problem (an XID) drains the node; once an administrator has
// resumed it, the events seen before the resume are ignored, and the
// heartbeat's reply says when it was so that the agent forgets them. An
// event after the resume drains it again.
func TestHealthEventsLastUntilAnAdminResumes(t *testing.T) {
	s := newTestServer(t, Config{Insecure: true})
	register(t, s, nil, "n1")
	ns := &nodeService{s: s}
	ctx := context.Background()
	beat := func(problems ...*phalanxv1.HealthProblem) *phalanxv1.HeartbeatResponse {
		t.Helper()
		resp, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "n1", Health: true, Problems: problems})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	state := func() string {
		n, err := s.store.Node("n1")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s %q by %s", n.State, n.Reason, n.ReasonUser)
	}
	seen := s.cfg.Clock.Now()
	xid := &phalanxv1.HealthProblem{Check: "gpu-xid", Message: "GPU 2 XID 48 (double bit ECC error): reset the GPU", Event: true, Since: timestamppb.New(seen)}
	if resp := beat(xid); resp.Resumed != nil {
		t.Errorf("reply to a healthy node's heartbeat: resumed %v", resp.Resumed)
	}
	if got, want := state(), `DRAIN "gpu-xid: GPU 2 XID 48 (double bit ECC error): reset the GPU" by phalanx`; got != want {
		t.Fatalf("after the XID: %s, want %s", got, want)
	}
	resumed := seen.Add(time.Second)
	if _, err := s.propose(ctx, fsm.SetNodeState{Name: "n1", State: cluster.NodeUp, User: "alice", Time: resumed}); err != nil {
		t.Fatal(err)
	}
	resp := beat(xid)
	if got, want := state(), `UP "" by alice`; got != want {
		t.Errorf("old XID after the resume: %s, want %s", got, want)
	}
	if !resp.Resumed.AsTime().Equal(resumed) {
		t.Errorf("reply says resumed %v, want %v", resp.Resumed.AsTime(), resumed)
	}
	later := &phalanxv1.HealthProblem{Check: "gpu-xid", Message: "GPU 2 XID 79", Event: true, Since: timestamppb.New(resumed.Add(time.Millisecond))}
	beat(xid, later)
	if got, want := state(), `DRAIN "gpu-xid: GPU 2 XID 79" by phalanx`; got != want {
		t.Errorf("new XID after the resume: %s, want %s", got, want)
	}
}

// Heartbeat replies carry the health program's settings, and whether the
// node is drained.
func TestHeartbeatCarriesHealthCheck(t *testing.T) {
	s := newTestServer(t, Config{Insecure: true, HealthCheck: cluster.HealthCheck{Program: "/usr/sbin/nhc", Interval: 300 * time.Second,
		States: cluster.HealthCheckIdle | cluster.HealthCheckCycle}})
	register(t, s, nil, "n1")
	ns := &nodeService{s: s}
	resp, err := ns.Heartbeat(context.Background(), &phalanxv1.HeartbeatRequest{Name: "n1", Health: true,
		Problems: []*phalanxv1.HealthProblem{{Check: "health-program", Message: "nhc: check_fs_mount: /scratch not mounted"}}})
	if err != nil {
		t.Fatal(err)
	}
	if hc := resp.HealthCheck; hc.GetProgram() != "/usr/sbin/nhc" || hc.GetIntervalSeconds() != 300 || hc.GetNodeState() != "IDLE,CYCLE" || resp.Drained {
		t.Errorf("reply %v: want the program, 300 s, IDLE,CYCLE, not drained (it was UP when the heartbeat came)", resp)
	}
	resp, err = ns.Heartbeat(context.Background(), &phalanxv1.HeartbeatRequest{Name: "n1", Health: true})
	if err != nil || !resp.Drained {
		t.Errorf("second reply %v, %v: want drained", resp, err)
	}
	bad := Config{Insecure: true, DataDir: t.TempDir(), HealthCheck: cluster.HealthCheck{Program: "nhc", Interval: time.Second}}
	if _, err := bad.withDefaults(); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("a relative HealthCheckProgram: %v, want ErrInvalid", err)
	}
}

// Heartbeat replies carry UnkillableStepTimeout and UnkillableStepProgram
// when the config sets them, nothing (the agents' defaults) otherwise.
func TestHeartbeatCarriesUnkillableSettings(t *testing.T) {
	for _, tc := range []struct {
		u    cluster.Unkillable
		want *phalanxv1.Unkillable
	}{
		{cluster.Unkillable{}, nil},
		{cluster.Unkillable{Timeout: 120 * time.Second, Program: "/usr/local/sbin/unkillable"},
			&phalanxv1.Unkillable{TimeoutSeconds: 120, Program: "/usr/local/sbin/unkillable"}},
	} {
		s := newTestServer(t, Config{Insecure: true, Unkillable: tc.u})
		register(t, s, nil, "n1")
		resp, err := (&nodeService{s: s}).Heartbeat(context.Background(), &phalanxv1.HeartbeatRequest{Name: "n1", Health: true})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(resp.Unkillable, tc.want) {
			t.Errorf("config %+v: reply carries %v, want %v", tc.u, resp.Unkillable, tc.want)
		}
	}
	for _, u := range []cluster.Unkillable{{Timeout: -time.Second}, {Timeout: 2 * time.Hour}, {Timeout: 1500 * time.Millisecond}, {Program: "unkillable.sh"}} {
		bad := Config{Insecure: true, DataDir: t.TempDir(), Unkillable: u}
		if _, err := bad.withDefaults(); !errors.Is(err, cluster.ErrInvalid) {
			t.Errorf("Unkillable %+v: %v, want ErrInvalid", u, err)
		}
	}
}

func TestHealthReasonChecksInput(t *testing.T) {
	long := &phalanxv1.HealthProblem{Check: "c", Message: strings.Repeat("é", 2*maxReasonLen)}
	r, err := healthReason([]*phalanxv1.HealthProblem{long})
	if err != nil || len(r) > maxReasonLen || !strings.HasSuffix(r, "...") || !strings.HasPrefix(r, "c: é") {
		t.Fatalf("long message: %q (%d bytes), %v", r, len(r), err)
	}
	for _, bad := range [][]*phalanxv1.HealthProblem{
		{{Message: "no check"}},
		{{Check: "c", Message: "two\nlines"}},
		make([]*phalanxv1.HealthProblem, maxProblems+1),
	} {
		if _, err := healthReason(bad); !errors.Is(err, cluster.ErrInvalid) {
			t.Errorf("%v: err = %v, want ErrInvalid", bad, err)
		}
	}
}

// Registered NICs are kept and listed; malformed ones are refused.
func TestRegisterNICs(t *testing.T) {
	s := newTestServer(t, Config{Insecure: true})
	ns := &nodeService{s: s}
	ctx := context.Background()
	nic := &phalanxv1.NICInfo{Device: "mlx5_0", Port: 1, State: "ACTIVE", PhysState: "LinkUp", Rate: "200 Gb/sec (4X HDR)",
		LinkLayer: "InfiniBand", PciAddr: "0000:c0:00.0", NumaNode: 1, Gpus: []int32{0, 1}, Affinity: "PIX"}
	if _, err := ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n1", Cpus: 8, Gpus: 8, Nics: []*phalanxv1.NICInfo{nic}}); err != nil {
		t.Fatal(err)
	}
	resp, err := (&controllerService{s: s}).ListNodes(ctx, &phalanxv1.ListNodesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Nodes[0].Nics; len(got) != 1 || got[0].String() != nic.String() {
		t.Fatalf("listed NICs %v, want %v", got, nic)
	}
	for _, bad := range []*phalanxv1.NICInfo{{Port: 1}, {Device: "mlx5_0"}, {Device: "mlx5_0", Port: 1, Rate: "a\nb"}} {
		_, err := ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n2", Nics: []*phalanxv1.NICInfo{bad}})
		if err == nil || !strings.Contains(err.Error(), "RDMA port") {
			t.Errorf("NIC %v: err = %v, want a refusal naming the RDMA port", bad, err)
		}
	}
}
