package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
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
	if err == nil || !strings.Contains(err.Error(), "exceeds partition debug's MaxTime") {
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
