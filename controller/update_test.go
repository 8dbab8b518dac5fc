package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// scontrol update checks a new time limit with the partition the same
// update moves the job to, not the one it leaves.
func TestUpdateChecksLimitAndPartitionTogether(t *testing.T) {
	parts := []*cluster.Partition{
		{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp},
		{Name: "debug", AllNodes: true, State: cluster.PartitionUp, MaxTime: time.Hour},
	}
	s := newTestServer(t, Config{Partitions: parts})
	register(t, s, nil, "n1")
	spec := testSpec(1, 8)
	spec.Hold, spec.TimeLimitSeconds = true, 7200
	resp, err := s.submit(context.Background(), spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.JobId
	err = s.updateJob(context.Background(), &phalanxv1.UpdateJobRequest{JobId: id, TimeLimitSeconds: proto.Int64(7200), Partition: proto.String("debug")})
	if err == nil || !strings.Contains(err.Error(), "exceeds partition debug's MaxTime 1:00:00: give at most 1:00:00, or another partition with it (Partition=)") {
		t.Fatalf("2 h into debug (MaxTime 1 h): %v; want refused", err)
	}
	if err := s.updateJob(context.Background(), &phalanxv1.UpdateJobRequest{JobId: id, TimeLimitSeconds: proto.Int64(1800), Partition: proto.String("debug")}); err != nil {
		t.Fatalf("30 min into debug: %v", err)
	}
	if j, _ := s.store.Job(cluster.JobID(id)); j.Partition != "debug" || j.TimeLimit != 30*time.Minute {
		t.Fatalf("job = %s, %v; want debug, 30m", j.Partition, j.TimeLimit)
	}
}

// TimeLimit=+N and -N move the job's own limit, as in Slurm; a job
// without a limit has none to move.
func TestUpdateMovesTimeLimit(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	spec := testSpec(1, 8)
	spec.Hold, spec.TimeLimitSeconds = true, 7200
	resp, err := s.submit(context.Background(), spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.JobId
	change := func(secs int64) error {
		return s.updateJob(context.Background(), &phalanxv1.UpdateJobRequest{JobId: id, TimeLimitChangeSeconds: proto.Int64(secs)})
	}
	if err := change(-1800); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.store.Job(cluster.JobID(id)); j.TimeLimit != 90*time.Minute {
		t.Fatalf("2 h less 30 min: %v", j.TimeLimit)
	}
	if err := change(-3 * 3600); err == nil || !strings.Contains(err.Error(), "leaves none") {
		t.Errorf("a change past zero: %v", err)
	}
	both := &phalanxv1.UpdateJobRequest{JobId: id, TimeLimitSeconds: proto.Int64(60), TimeLimitChangeSeconds: proto.Int64(60)}
	if err := s.updateJob(context.Background(), both); err == nil {
		t.Errorf("a limit and a change at once: accepted")
	}
	spec.TimeLimitSeconds = 0
	resp, err = s.submit(context.Background(), spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id = resp.JobId
	if err := change(600); err == nil || !strings.Contains(err.Error(), "has no time limit") {
		t.Errorf("a change to no limit: %v", err)
	}
}

// A DRAIN or INACTIVE partition takes no new job, by submit or by update,
// with Slurm's message; a DOWN one does (its jobs wait).
func TestDrainedPartitionTakesNoNewJobs(t *testing.T) {
	parts := []*cluster.Partition{
		{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp},
		{Name: "drained", AllNodes: true, State: cluster.PartitionDrain},
		{Name: "off", AllNodes: true, State: cluster.PartitionInactive},
		{Name: "down", AllNodes: true, State: cluster.PartitionDown},
	}
	s := newTestServer(t, Config{Partitions: parts})
	register(t, s, nil, "n1")
	for _, p := range []string{"drained", "off"} {
		spec := testSpec(1, 8)
		spec.Partition = p
		for _, testOnly := range []bool{false, true} {
			_, err := s.submit(context.Background(), spec, testOnly, nil)
			if !errors.Is(err, cluster.ErrConflict) || !strings.Contains(err.Error(), "Required partition not available (inactive or drain)") {
				t.Errorf("submit to %s (test-only %v): %v; want Slurm's refusal", p, testOnly, err)
			}
		}
	}
	spec := testSpec(1, 8)
	spec.Partition, spec.Hold = "down", true
	if _, err := s.submit(context.Background(), spec, false, nil); err != nil {
		t.Errorf("submit to a DOWN partition: %v; want it queued", err)
	}
	spec.Partition = "gpu"
	resp, err := s.submit(context.Background(), spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.updateJob(context.Background(), &phalanxv1.UpdateJobRequest{JobId: resp.JobId, Partition: proto.String("drained")})
	if !errors.Is(err, cluster.ErrConflict) {
		t.Errorf("moving a job into a DRAIN partition: %v; want refused", err)
	}
	if err := s.updateJob(context.Background(), &phalanxv1.UpdateJobRequest{JobId: resp.JobId, Nice: proto.Int32(10)}); err != nil {
		t.Errorf("an update that moves nothing: %v", err)
	}
}

// As in Slurm, every task holds a CPU at least: a job that asks for none
// gets one per task (a node held whole, --exclusive, needs none), so more
// tasks than a node's CPUs can never run.
func TestEveryTaskHoldsACPU(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1") // 64 CPUs
	for _, tc := range []struct {
		tasks     int32
		exclusive bool
		cpus      int
	}{{0, false, 1}, {4, false, 4}, {4, true, 0}} {
		spec := testSpec(1, 8)
		spec.Hold, spec.TasksPerNode, spec.Exclusive = true, tc.tasks, tc.exclusive
		resp, err := s.submit(context.Background(), spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if j, _ := s.store.Job(cluster.JobID(resp.JobId)); j.CPUsPerNode != tc.cpus {
			t.Errorf("%d tasks, exclusive %v: %d CPUs per node; want %d", tc.tasks, tc.exclusive, j.CPUsPerNode, tc.cpus)
		}
	}
	spec := testSpec(1, 0)
	spec.TasksPerNode = 65
	if _, err := s.submit(context.Background(), spec, true, nil); !errors.Is(err, cluster.ErrUnsatisfiable) {
		t.Errorf("65 tasks on a node of 64 CPUs: %v; want never satisfiable", err)
	}
}

// A running job's time limit changes as Slurm's does: its owner may only
// shorten it (TimeLimit=N or -N), an operator may also lengthen or lift
// it; the nodes running it are sent the new limit. A job whose attempt is
// ending keeps its limit.
func TestUpdateRunningJobTimeLimit(t *testing.T) {
	s := newTestServer(t, Config{OperatorUsers: []string{"carol"}})
	register(t, s, nil, "n1")
	spec := testSpec(1, 8)
	spec.TimeLimitSeconds = 7200
	resp, err := s.submit(context.Background(), spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	waitState(t, s, id, cluster.JobConfiguring)
	ns := &nodeService{s: s}
	if _, err := ns.ReportTaskStatus(context.Background(), &phalanxv1.ReportTaskStatusRequest{
		Node: "n1", JobId: uint64(id), State: string(cluster.TaskRunning)}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, id, cluster.JobRunning)
	alice := auth.NewContext(context.Background(), auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal})
	carol := auth.NewContext(context.Background(), auth.Identity{User: "carol", UID: 1002, GID: 100, Kind: auth.KindLocal})
	update := func(ctx context.Context, set, change *int64) error {
		return s.updateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: uint64(id), TimeLimitSeconds: set, TimeLimitChangeSeconds: change})
	}
	limit := func() time.Duration {
		j, err := s.store.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		return j.TimeLimit
	}
	for _, step := range []struct {
		what        string
		ctx         context.Context
		set, change *int64
		denied      bool
		want        time.Duration
	}{
		{"alice shortens it to 1 h", alice, proto.Int64(3600), nil, false, time.Hour},
		{"alice lengthens it to 90 min", alice, proto.Int64(5400), nil, true, time.Hour},
		{"alice adds 1 min", alice, nil, proto.Int64(60), true, time.Hour},
		{"alice lifts it", alice, proto.Int64(0), nil, true, time.Hour},
		{"alice takes 10 min", alice, nil, proto.Int64(-600), false, 50 * time.Minute},
		{"carol (operator) adds 1 h", carol, nil, proto.Int64(3600), false, 110 * time.Minute},
		{"carol lengthens it to 3 h", carol, proto.Int64(3 * 3600), nil, false, 3 * time.Hour},
	} {
		err := update(step.ctx, step.set, step.change)
		if denied := errors.Is(err, cluster.ErrPermission); denied != step.denied || (!denied && err != nil) {
			t.Errorf("%s: %v; want denied %v", step.what, err, step.denied)
		}
		if got := limit(); got != step.want {
			t.Errorf("%s: limit %v; want %v", step.what, got, step.want)
		}
	}
	as := s.assignments("n1", nodeJobs(s, "n1"))
	if len(as.Assignments) != 1 || as.Assignments[0].Job.TimeLimitSeconds != 3*3600 {
		t.Fatalf("assignments = %v; want the task with the new limit, 10800 s", as)
	}
	if err := update(carol, proto.Int64(0), nil); err != nil || limit() != 0 {
		t.Errorf("carol lifts it: %v, limit %v; want no limit", err, limit())
	}

	plan := &scheduler.Plan{Preemptions: []scheduler.Preemption{{Victim: id, For: 99}}}
	if n := s.preempt(context.Background(), plan, s.store.ActiveJobs(), time.Now()); n != 1 {
		t.Fatalf("preempt signalled %d jobs; want 1", n)
	}
	if err := update(carol, proto.Int64(600), nil); !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), "pending or running") {
		t.Errorf("the limit of a preempted job (its tasks stopping): %v; want refused", err)
	}
}

// An update with a request ID is exactly-once: a retry of TimeLimit=-10
// (its answer lost in a failover) does not take ten more minutes off, and
// is answered as the first was even once the job has changed; another
// request does.
func TestUpdateRequestIsExactlyOnce(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	spec := testSpec(1, 8)
	spec.TimeLimitSeconds, spec.Hold = 3600, true // it stays pending
	resp, err := s.submit(context.Background(), spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	limit := func() time.Duration {
		j, err := s.store.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		return j.TimeLimit
	}
	ctx := context.Background()
	less := func(requestID string, secs int64) error {
		return s.updateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: uint64(id), TimeLimitChangeSeconds: proto.Int64(-secs), RequestId: requestID})
	}
	for range 3 {
		if err := less("r1", 600); err != nil {
			t.Fatal(err)
		}
	}
	if got := limit(); got != 50*time.Minute {
		t.Errorf("TimeLimit=-10 sent three times as one request: limit %v; want 50m0s", got)
	}
	if err := less("r2", 600); err != nil || limit() != 40*time.Minute {
		t.Errorf("a second request: %v, limit %v; want 40m0s", err, limit())
	}
	// Taking 45 minutes off 40 leaves none: refused, and not remembered, so
	// that the same request, asked again, is checked again.
	if err := less("r3", 45*60); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("TimeLimit=-45 of 40 minutes: %v; want refused", err)
	}
	if err := less("r2", 40*60); err != nil || limit() != 40*time.Minute {
		t.Errorf("a retry of r2 with the job changed since: %v, limit %v; want answered as before, 40m0s", err, limit())
	}
	if _, err := (&controllerService{s: s}).CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{uint64(id)}}); err != nil {
		t.Fatal(err)
	}
	if err := less("r1", 600); err != nil {
		t.Errorf("a retry of r1 once the job ended: %v; want answered as before", err)
	}
	if err := less("r4", 600); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("a new update of the ended job: %v; want refused", err)
	}
}

// A config without ClusterName gets Slurm's required one by default, so
// that tasks find SLURM_CLUSTER_NAME set; agents learn it at registration.
func TestDefaultClusterName(t *testing.T) {
	for _, tc := range []struct{ set, want string }{{"", DefaultClusterName}, {"dgx", "dgx"}} {
		s := newTestServer(t, Config{ClusterName: tc.set})
		resp, err := (&nodeService{s: s}).RegisterNode(context.Background(), &phalanxv1.RegisterNodeRequest{Name: "n1", Addr: "127.0.0.1", Cpus: 8, MemoryMb: 1024})
		if err != nil || resp.ClusterName != tc.want {
			t.Errorf("ClusterName %q: registration says %q (%v); want %q", tc.set, resp.GetClusterName(), err, tc.want)
		}
	}
}
