package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// manualClock is a Clock a test moves by hand.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestLeaseTiming(t *testing.T) {
	for _, tc := range []struct{ ttl, lease time.Duration }{
		{time.Second, 750 * time.Millisecond},
		{2 * time.Second, 1500 * time.Millisecond},
		{30 * time.Second, 28 * time.Second}, // the margin is at most 2 s
	} {
		if got := NodeLease(tc.ttl); got != tc.lease {
			t.Errorf("NodeLease(%s) = %s; want %s", tc.ttl, got, tc.lease)
		}
	}
	if err := checkLeaseTiming(30*time.Second, 5*time.Second); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	if err := checkLeaseTiming(10*time.Second, 5*time.Second); err == nil || !strings.Contains(err.Error(), "give a HeartbeatInterval of at most 4s") {
		t.Errorf("a heartbeat too long for the lease: %v", err)
	}
	if err := checkLeaseTiming(500*time.Millisecond, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "NodeTTL 500ms is too short") {
		t.Errorf("a TTL too short: %v", err)
	}
	if _, err := (&Config{NodeTTL: 4 * time.Second, HeartbeatInterval: 2 * time.Second, Insecure: true}).withDefaults(); err == nil {
		t.Error("the controller took a heartbeat interval its leases cannot outlast")
	}
}

// A node that fences gets a lease with every registration and heartbeat,
// one that does not gets none; once the leader has found a node silent,
// it gets no lease until its DOWN is applied and it registers again.
func TestLeaseGrants(t *testing.T) {
	clock := &manualClock{t: time.Now()}
	// A TTL of an hour: the leader's own liveness ticks (every quarter of
	// it, on the real clock) stay out of the test's way.
	s := newTestServer(t, Config{NodeTTL: time.Hour, HeartbeatInterval: time.Second, SchedInterval: time.Hour, Clock: clock})
	ns := &nodeService{s: s}
	ctx := context.Background()
	lease := NodeLease(time.Hour).Milliseconds()
	reg := func(name string, fences bool) (*phalanxv1.RegisterNodeResponse, error) {
		return ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: name, Addr: "127.0.0.1", Cpus: 8, MemoryMb: 1024, Gpus: 8, Fences: fences})
	}
	if r, err := reg("f1", true); err != nil || r.LeaseMs != lease {
		t.Fatalf("register a fencing node: %v, %v; want a lease of %d ms", r, err, lease)
	}
	if r, err := reg("p1", false); err != nil || r.LeaseMs != 0 {
		t.Fatalf("register a node that does not fence: %v, %v; want no lease", r, err)
	}
	if n, _ := s.store.Node("f1"); !n.Fences {
		t.Error("the store does not record that f1 fences")
	}
	if r, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "f1"}); err != nil || r.LeaseMs != lease || r.Reregister {
		t.Fatalf("heartbeat of f1: %v, %v; want a lease", r, err)
	}
	if r, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "p1"}); err != nil || r.LeaseMs != 0 {
		t.Fatalf("heartbeat of p1: %v, %v; want no lease", r, err)
	}

	// f1 falls silent: the leader's verdict is on its way (it has decided,
	// the DOWN is not applied yet).
	clock.Add(2 * time.Hour)
	s.nodes.mu.Lock()
	s.nodes.lastSeen["p1"] = clock.Now()
	s.nodes.declaring["f1"] = true
	s.nodes.mu.Unlock()
	if r, err := ns.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "f1"}); err != nil || r.LeaseMs != 0 || !r.Reregister {
		t.Errorf("heartbeat of a node found silent: %v, %v; want no lease, register again", r, err)
	}
	if r, err := reg("f1", true); err == nil {
		t.Errorf("a node found silent registered before its DOWN applied, lease %d ms", r.LeaseMs)
	}
	// The verdict applies; the node may come back.
	s.checkLiveness(ctx) // f1 is already being declared: not proposed twice
	if n, _ := s.store.Node("f1"); n.State != cluster.NodeUp {
		t.Fatalf("f1 is %s; want UP until the verdict on its way applies", n.State)
	}
	clock.Add(2 * time.Hour) // its refused heartbeat was news of it: silent again
	s.nodes.mu.Lock()
	delete(s.nodes.declaring, "f1")
	s.nodes.lastSeen["p1"] = clock.Now()
	s.nodes.mu.Unlock()
	s.checkLiveness(ctx)
	if n, _ := s.store.Node("f1"); n.State != cluster.NodeDown {
		t.Fatalf("f1 silent for 2h is %s; want DOWN", n.State)
	}
	if s.nodes.declaring["f1"] {
		t.Error("f1 is still being declared once its DOWN applied")
	}
	if r, err := reg("f1", true); err != nil || r.LeaseMs != lease {
		t.Errorf("f1 registering after its DOWN: %v, %v; want a lease", r, err)
	}
}

// A checkpoint step is recorded once every rank's node has reported it;
// a node reporting a rank that runs elsewhere is refused.
func TestReportCheckpoint(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1", "n2")
	spec := testSpec(2, 8)
	spec.CheckpointDir = "/shared/ckpt"
	resp, err := s.submit(context.Background(), spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	j := waitState(t, s, id, cluster.JobConfiguring)
	ns := &nodeService{s: s}
	report := func(node string, rank int) error {
		_, err := ns.ReportCheckpoint(context.Background(), &phalanxv1.ReportCheckpointRequest{Node: node, JobId: uint64(id), Rank: int32(rank), Step: 40})
		return err
	}
	other := j.Tasks[1].Node
	if err := report(other, 0); err == nil || !strings.Contains(err.Error(), "does not run on "+other) {
		t.Errorf("%s reporting rank 0: %v; want permission denied", other, err)
	}
	if err := report(j.Tasks[0].Node, 0); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.store.Job(id); j.Checkpointed {
		t.Fatal("a step one rank of two committed is complete")
	}
	if err := report(other, 1); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.store.Job(id); !j.Checkpointed || j.CheckpointStep != 40 {
		t.Errorf("after both ranks: %v step %d; want step 40", j.Checkpointed, j.CheckpointStep)
	}
	if stored, _ := s.store.Job(id); jobToProto(stored, nil).CheckpointStep == nil {
		t.Error("the API does not show the job's checkpoint step")
	}
	evs, err := (&controllerService{s: s}).ListEvents(context.Background(), &phalanxv1.ListEventsRequest{Jobs: []uint64{uint64(id)}})
	if err != nil || len(evs.Events) != 1 || evs.Events[0].Kind != "checkpoint" || evs.Events[0].Job != uint64(id) ||
		!strings.HasPrefix(evs.Events[0].Message, "checkpoint step 40 complete: committed by all 2 ranks of attempt 0") {
		t.Errorf("the job's events: %v, %v; want its checkpoint", evs, err)
	}
	if evs, _ := (&controllerService{s: s}).ListEvents(context.Background(), &phalanxv1.ListEventsRequest{Nodes: []string{"n1"}}); len(evs.Events) != 1 || evs.Events[0].Kind != "registered" {
		t.Errorf("n1's events: %v; want its registration alone", evs)
	}
	ev := func(node, kind string) error {
		_, err := ns.ReportJobEvent(context.Background(), &phalanxv1.ReportJobEventRequest{Node: node, JobId: uint64(id), Kind: kind, Message: "m"})
		return err
	}
	if err := ev(other, "hang"); err != nil {
		t.Errorf("a hang on %s: %v", other, err)
	}
	register(t, s, nil, "n3")
	if err := ev("n3", "hang"); err == nil || !strings.Contains(err.Error(), "has no task on n3") {
		t.Errorf("a node without a task of the job reported its hang: %v", err)
	}
	if err := ev(other, "drained"); err == nil || !strings.Contains(err.Error(), `job event kind "drained"`) {
		t.Errorf("an agent reported a node's kind as a job event: %v", err)
	}
	if _, err := jobFromSpec(&phalanxv1.JobSpec{Nodes: 1, CheckpointDir: "ckpt", Script: "x", WorkDir: "/tmp"}, 1<<20); err == nil {
		t.Error("a relative --checkpoint-dir was accepted")
	}
}

// The controllers check a job's hang timeout: 10 minutes to 12 hours, or
// none; a job that gives none gets the cluster's default.
func TestHangTimeoutAdmission(t *testing.T) {
	s := newTestServer(t, Config{DefaultHangTimeout: 30 * time.Minute})
	register(t, s, nil, "n1")
	for secs, want := range map[int64]string{300: "--hang-timeout=5m: give 10m to 12h", 13 * 3600: "--hang-timeout", 600: "", 0: "", -1: ""} {
		spec := testSpec(1, 1)
		spec.HangTimeoutSeconds = secs
		resp, err := s.submit(context.Background(), spec, false, nil)
		if (err == nil) != (want == "") || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("hang timeout %d s: %v; want %q", secs, err, want)
			continue
		}
		if err != nil {
			continue
		}
		j, _ := s.store.Job(cluster.JobID(resp.JobId))
		wantD := map[int64]time.Duration{600: 10 * time.Minute, 0: 30 * time.Minute, -1: 0}[secs]
		if j.HangTimeout != wantD {
			t.Errorf("hang timeout %d s: the job has %s; want %s", secs, j.HangTimeout, wantD)
		}
	}
}
