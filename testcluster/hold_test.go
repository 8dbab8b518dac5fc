package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// sbatch --hold and scontrol hold, uhold and release, with Slurm's rules:
// a held job waits (JobHeldUser, or JobHeldAdmin when an operator held
// it) though it could run; its user may release a user hold, not an
// operator's; only a pending job is held.
func TestHoldAndRelease(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake", OperatorUsers: []string{"carol"}})
	alice := auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal}
	carol := auth.Identity{User: "carol", UID: 1002, GID: 100, Kind: auth.KindLocal}
	ctx := context.Background()
	asAlice, asCarol := c.ClientAs(alice), c.ClientAs(carol)
	dir := runtimetest.SharedDir(t)
	sub := func(name string, hold bool) uint64 {
		s := spec(dir, name, 1, 8, "#!/bin/sh\nsleep 60\n") // the whole node: one runs at a time
		s.Uid, s.Gid, s.User, s.Hold = int32(alice.UID), int32(alice.GID), alice.User, hold
		resp, err := asAlice.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: s})
		if err != nil {
			t.Fatal(err)
		}
		return resp.JobId
	}
	waitReason := func(id uint64, state, reason string) {
		t.Helper()
		c.Eventually(10*time.Second, func() error {
			j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
			if err != nil || j.State != state || j.Reason != reason {
				return fmt.Errorf("job %d: %s (%s), %v; want %s (%s)", id, j.GetState(), j.GetReason(), err, state, reason)
			}
			return nil
		})
	}
	hold := func(api phalanxv1.ControllerServiceClient, id uint64, req phalanxv1.HoldRequest) error {
		_, err := api.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, Hold: req})
		return err
	}

	held := sub("held", true) // the node is free: only the hold keeps it
	waitReason(held, "PENDING", "JobHeldUser")
	time.Sleep(300 * time.Millisecond)
	waitReason(held, "PENDING", "JobHeldUser")
	if err := hold(asAlice, held, phalanxv1.HoldRequest_HOLD_REQUEST_RELEASE); err != nil {
		t.Fatalf("alice releases her own hold: %v", err)
	}
	c.WaitJob(held, 10*time.Second, "RUNNING")
	if err := hold(asAlice, held, phalanxv1.HoldRequest_HOLD_REQUEST_HOLD); err == nil || !strings.Contains(err.Error(), "only a pending job") {
		t.Errorf("hold of a running job: %v", err)
	}

	next := sub("next", false) // waits for the node
	if err := hold(asCarol, next, phalanxv1.HoldRequest_HOLD_REQUEST_HOLD); err != nil {
		t.Fatalf("an operator holds alice's job: %v", err)
	}
	waitReason(next, "PENDING", "JobHeldAdmin")
	for _, req := range []phalanxv1.HoldRequest{phalanxv1.HoldRequest_HOLD_REQUEST_RELEASE, phalanxv1.HoldRequest_HOLD_REQUEST_USER_HOLD} {
		if err := hold(asAlice, next, req); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "JobHeldAdmin") {
			t.Errorf("alice %v on an operator's hold: %v; want permission denied", req, err)
		}
	}
	if err := hold(asCarol, next, phalanxv1.HoldRequest_HOLD_REQUEST_USER_HOLD); err != nil {
		t.Fatal(err)
	}
	waitReason(next, "PENDING", "JobHeldUser")
	if err := hold(asAlice, next, phalanxv1.HoldRequest_HOLD_REQUEST_RELEASE); err != nil {
		t.Fatalf("alice releases a user hold an operator set: %v", err)
	}
	if _, err := asAlice.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{held}}); err != nil {
		t.Fatal(err)
	}
	c.WaitJob(next, 10*time.Second, "RUNNING")
}

// sbatch --begin: a job waits, reason BeginTime, until its time, then runs.
func TestBeginTimeDefersAJob(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake"})
	ctx := context.Background()
	s := spec(t.TempDir(), "later", 1, 0, "#!/bin/sh\nsleep 60\n")
	begin := time.Now().Add(1500 * time.Millisecond)
	s.BeginTime = timestamppb.New(begin)
	id := submit(t, c, s)
	c.Eventually(5*time.Second, func() error {
		j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.State != "PENDING" || j.Reason != "BeginTime" {
			return fmt.Errorf("job %d: %s (%s), %v; want PENDING (BeginTime)", id, j.GetState(), j.GetReason(), err)
		}
		return nil
	})
	c.WaitJob(id, 10*time.Second, "RUNNING")
	if started := mustStart(t, c, id); started.Before(begin) {
		t.Errorf("job %d started at %v, before its begin time %v", id, started, begin)
	}
}

// scontrol requeue: the running job's tasks are stopped, and it runs again
// in its next attempt, same ID, the first attempt recorded REQUEUED; its
// owner may, another user may not; a pending job is refused.
func TestRequeueRunningJob(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake"})
	alice := auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal}
	bob := auth.Identity{User: "bob", UID: 1001, GID: 100, Kind: auth.KindLocal}
	ctx := context.Background()
	asAlice := c.ClientAs(alice)
	s := spec(runtimetest.SharedDir(t), "again", 1, 8, "#!/bin/sh\nsleep 60\n")
	s.Uid, s.Gid, s.User = int32(alice.UID), int32(alice.GID), alice.User
	resp, err := asAlice.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.JobId
	c.WaitJob(id, 10*time.Second, "RUNNING")
	waiting := submit(t, c, spec(t.TempDir(), "waiting", 1, 8, "#!/bin/sh\nsleep 60\n"))
	if _, err := c.Client.RequeueJob(ctx, &phalanxv1.RequeueJobRequest{JobIds: []uint64{waiting}}); err == nil || !strings.Contains(err.Error(), "pending") {
		t.Errorf("requeue of a pending job: %v", err)
	}
	if _, err := c.ClientAs(bob).RequeueJob(ctx, &phalanxv1.RequeueJobRequest{JobIds: []uint64{id}}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("bob requeues alice's job: %v; want permission denied", err)
	}
	r, err := asAlice.RequeueJob(ctx, &phalanxv1.RequeueJobRequest{JobIds: []uint64{id}})
	if err != nil || len(r.Requeued) != 1 {
		t.Fatalf("alice requeues her job: %v, %v", r, err)
	}
	// Requeued first in its class, it runs again before the job that waited.
	c.Eventually(20*time.Second, func() error {
		j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.State != "RUNNING" || j.Attempt != 1 {
			return fmt.Errorf("job %d: %s attempt %d, %v; want RUNNING in attempt 1", id, j.GetState(), j.GetAttempt(), err)
		}
		if a := j.Attempts[0]; a.State != "REQUEUED" {
			return fmt.Errorf("attempt 0 recorded as %s, want REQUEUED", a.State)
		}
		return nil
	})
	if j, _ := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: waiting}); j.GetState() != "PENDING" {
		t.Errorf("the waiting job is %s: the requeued job should have gone first", j.GetState())
	}
	// A job submitted with --no-requeue is not requeued by hand either, as
	// in Slurm.
	if _, err := c.Client.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{id, waiting}}); err != nil {
		t.Fatal(err)
	}
	once := spec(t.TempDir(), "once", 1, 8, "#!/bin/sh\nsleep 60\n")
	once.NoRequeue = true
	onceID := submit(t, c, once)
	c.WaitJob(onceID, 20*time.Second, "RUNNING")
	if _, err := c.Client.RequeueJob(ctx, &phalanxv1.RequeueJobRequest{JobIds: []uint64{onceID}}); err == nil || !strings.Contains(err.Error(), "Requested operation is presently disabled") {
		t.Errorf("requeue of a --no-requeue job: %v; want Slurm's refusal", err)
	}
}

// sbatch --deadline: a job that waits for the node until it could no
// longer end in time ends DEADLINE, reason DeadLine; one that can, runs.
func TestDeadlineEndsAJobThatCannotEndInTime(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake"})
	ctx := context.Background()
	busy := submit(t, c, spec(t.TempDir(), "busy", 1, 8, "#!/bin/sh\nsleep 60\n"))
	c.WaitJob(busy, 10*time.Second, "RUNNING")
	late := spec(t.TempDir(), "late", 1, 8, "#!/bin/sh\nsleep 60\n")
	late.TimeLimitSeconds = 60
	late.Deadline = timestamppb.New(time.Now().Add(61 * time.Second)) // a second to start in
	id := submit(t, c, late)
	j := c.WaitJob(id, 10*time.Second, "DEADLINE", "RUNNING", "CANCELLED")
	if j.State != "DEADLINE" || j.Reason != "DeadLine" {
		t.Fatalf("job %d: %s (%s); want DEADLINE (DeadLine)", id, j.State, j.Reason)
	}
	if _, err := c.Client.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{busy}}); err != nil {
		t.Fatal(err)
	}
	inTime := spec(t.TempDir(), "in-time", 1, 8, "#!/bin/sh\nsleep 60\n")
	inTime.TimeLimitSeconds = 60
	inTime.Deadline = timestamppb.New(time.Now().Add(time.Hour))
	c.WaitJob(submit(t, c, inTime), 10*time.Second, "RUNNING")
	// As Slurm's, a deadline already passed is refused at submit.
	past := spec(t.TempDir(), "past", 1, 8, "#!/bin/sh\nsleep 60\n")
	past.Deadline = timestamppb.New(time.Now().Add(-time.Hour))
	if _, err := c.Client.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: past}); err == nil || !strings.Contains(err.Error(), "Requested time limit is invalid") {
		t.Errorf("a deadline already passed: %v; want refused", err)
	}
}
