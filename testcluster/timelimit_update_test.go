package testcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// scontrol update TimeLimit= on running jobs, end to end: the agents
// running a job follow its new limit. An operator's shorter limit ends
// the job TIMEOUT at that limit; a longer one keeps it running past the
// one it started with. Its owner may not lengthen it, but may shorten it,
// below the time it has run too: it ends at once, TIMEOUT.
func TestRunningJobTimeLimitUpdates(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, Runtime: "fake", OperatorUsers: []string{"carol"}})
	alice := auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal}
	carol := auth.Identity{User: "carol", UID: 1002, GID: 100, Kind: auth.KindLocal}
	asAlice, asCarol := c.ClientAs(alice), c.ClientAs(carol)
	ctx := context.Background()
	dir := runtimetest.SharedDir(t) // the outputs are opened as alice
	submitAs := func(name string, limit int64) uint64 {
		s := spec(dir, name, 1, 1, "#!/bin/sh\nsleep 600\n")
		s.Uid, s.Gid, s.User, s.TimeLimitSeconds = int32(alice.UID), int32(alice.GID), alice.User, limit
		resp, err := asAlice.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: s})
		if err != nil {
			t.Fatal(err)
		}
		return resp.JobId
	}
	update := func(cl phalanxv1.ControllerServiceClient, req *phalanxv1.UpdateJobRequest, want codes.Code, what string) {
		t.Helper()
		if _, err := cl.UpdateJob(ctx, req); status.Code(err) != want {
			t.Fatalf("%s: %v; want %v", what, err, want)
		}
	}
	lowered, raised := submitAs("lowered", 3600), submitAs("raised", 5)
	c.WaitJob(lowered, 10*time.Second, "RUNNING")
	c.WaitJob(raised, 10*time.Second, "RUNNING")

	update(asAlice, &phalanxv1.UpdateJobRequest{JobId: raised, TimeLimitSeconds: proto.Int64(3600)}, codes.PermissionDenied, "alice lengthens her running job's limit")
	update(asAlice, &phalanxv1.UpdateJobRequest{JobId: raised, TimeLimitChangeSeconds: proto.Int64(60)}, codes.PermissionDenied, "alice adds a minute to it")
	update(asAlice, &phalanxv1.UpdateJobRequest{JobId: raised, TimeLimitSeconds: proto.Int64(0)}, codes.PermissionDenied, "alice lifts its limit")
	update(asCarol, &phalanxv1.UpdateJobRequest{JobId: raised, TimeLimitSeconds: proto.Int64(3600)}, codes.OK, "carol (operator) lengthens it")
	update(asCarol, &phalanxv1.UpdateJobRequest{JobId: lowered, TimeLimitSeconds: proto.Int64(4)}, codes.OK, "carol shortens the other")

	j := c.WaitJob(lowered, 20*time.Second, "TIMEOUT", "COMPLETED", "FAILED", "CANCELLED")
	ran := j.EndTime.AsTime().Sub(j.StartTime.AsTime())
	if j.State != "TIMEOUT" || j.TimeLimitSeconds != 4 || ran < 4*time.Second || ran > time.Minute {
		t.Errorf("the shortened job ended %s after %v with limit %ds; want TIMEOUT at its new 4s limit", j.State, ran, j.TimeLimitSeconds)
	}

	// Past the limit it started with, the lengthened job runs on.
	j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: raised})
	if err != nil {
		t.Fatal(err)
	}
	pastOld := j.StartTime.AsTime().Add(7 * time.Second)
	testcluster.Eventually(t, 20*time.Second, func() error {
		if time.Now().Before(pastOld) {
			return fmt.Errorf("job %d has not yet run past its first limit", raised)
		}
		return nil
	})
	if j, err = c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: raised}); err != nil || j.State != "RUNNING" || j.TimeLimitSeconds != 3600 {
		t.Fatalf("the lengthened job, past its first limit: %s, limit %ds (%v); want RUNNING, 3600s", j.GetState(), j.GetTimeLimitSeconds(), err)
	}
	// Its owner shortens it below the time it has run: it ends at once.
	update(asAlice, &phalanxv1.UpdateJobRequest{JobId: raised, TimeLimitChangeSeconds: proto.Int64(-3598)}, codes.OK, "alice shortens it to 2s")
	j = c.WaitJob(raised, 20*time.Second, "TIMEOUT", "COMPLETED", "FAILED", "CANCELLED")
	if j.State != "TIMEOUT" || j.TimeLimitSeconds != 2 {
		t.Errorf("the job alice shortened below its run time: %s with limit %ds; want TIMEOUT, 2s", j.State, j.TimeLimitSeconds)
	}
}
