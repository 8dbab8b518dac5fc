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
)

// scontrol update TimeLimit=0 is a limit of zero, as Slurm 22.05's scontrol
// sets it (TimeLimit=00:00:00; sbatch --time=0 is none): its owner may set
// it on a running job, whose limit has then passed (one second, Phalanx's
// least, goes to its nodes); a pending job, which it would end the moment
// it started, is refused with the ways out. It lifted the limit.
func TestUpdateTimeLimitZero(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	alice := auth.NewContext(context.Background(), auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal})
	submit := func(gpus int) cluster.JobID {
		t.Helper()
		spec := testSpec(1, gpus)
		spec.TimeLimitSeconds = 7200
		resp, err := s.submit(alice, spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cluster.JobID(resp.JobId)
	}
	zero := func(id cluster.JobID, extra *int64) error {
		return s.updateJob(alice, &phalanxv1.UpdateJobRequest{JobId: uint64(id), TimeLimitZero: true, TimeLimitSeconds: extra})
	}
	limit := func(id cluster.JobID) time.Duration {
		t.Helper()
		j, err := s.store.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		return j.TimeLimit
	}

	running := submit(8)
	waitState(t, s, running, cluster.JobConfiguring)
	if _, err := (&nodeService{s: s}).ReportTaskStatus(context.Background(), &phalanxv1.ReportTaskStatusRequest{
		Node: "n1", JobId: uint64(running), State: string(cluster.TaskRunning)}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, running, cluster.JobRunning)
	pending := submit(8) // n1's GPUs are the first job's

	err := zero(pending, nil)
	if !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), "is pending") || !strings.Contains(err.Error(), "TimeLimit=UNLIMITED") {
		t.Errorf("TimeLimit=0 of a pending job: %v; want refused, naming UNLIMITED", err)
	}
	if got := limit(pending); got != 2*time.Hour {
		t.Errorf("pending job's limit after the refusal: %v; want 2h", got)
	}
	if err := zero(running, proto.Int64(600)); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("TimeLimit=0 with another limit: %v; want refused", err)
	}
	if err := zero(running, nil); err != nil {
		t.Fatalf("alice sets TimeLimit=0 on her running job: %v", err)
	}
	if got := limit(running); got != time.Second {
		t.Errorf("running job's limit after TimeLimit=0: %v; want 1s, passed", got)
	}
	as := s.assignments("n1", nodeJobs(s, "n1"))
	if len(as.Assignments) != 1 || as.Assignments[0].Job.TimeLimitSeconds != 1 {
		t.Errorf("assignments = %v; want the task with a limit of 1 s", as)
	}
}
