package testcluster_test

import (
	"context"
	"fmt"
	"strings"
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

// scontrol update, by who may make each change: only operators (and
// administrators) drain and resume nodes; a job's owner renames it and
// shortens its time limit, another user changes nothing of it, and only an
// operator lengthens a limit.
func TestUpdatesNeedOwnershipOrOperator(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, Runtime: "fake", OperatorUsers: []string{"carol"}})
	alice := auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal}
	bob := auth.Identity{User: "bob", UID: 1001, GID: 100, Kind: auth.KindLocal}
	carol := auth.Identity{User: "carol", UID: 1002, GID: 100, Kind: auth.KindLocal}
	asAlice, asBob, asCarol := c.ClientAs(alice), c.ClientAs(bob), c.ClientAs(carol)
	ctx := context.Background()
	code := func(err error, want codes.Code, what string) {
		t.Helper()
		if status.Code(err) != want {
			t.Errorf("%s: %v; want %v", what, err, want)
		}
	}

	drain := &phalanxv1.UpdateNodeRequest{Names: c.Nodes, State: "DRAIN", Reason: "cable swap"}
	_, err := asAlice.UpdateNode(ctx, drain)
	code(err, codes.PermissionDenied, "alice drains the nodes")
	_, err = asCarol.UpdateNode(ctx, &phalanxv1.UpdateNodeRequest{Names: c.Nodes, State: "DRAIN"})
	code(err, codes.InvalidArgument, "a drain without a reason")
	_, err = asCarol.UpdateNode(ctx, &phalanxv1.UpdateNodeRequest{Names: []string{"gpu999"}, State: "DRAIN", Reason: "x"})
	code(err, codes.NotFound, "draining an unknown node")
	_, err = asCarol.UpdateNode(ctx, drain)
	code(err, codes.OK, "carol (operator) drains the nodes")
	nodes, err := c.Client.ListNodes(ctx, &phalanxv1.ListNodesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Nodes {
		if n.State != "DRAINED" || n.Reason != "cable swap" {
			t.Errorf("node %s after the drain: %s %q; want DRAINED \"cable swap\"", n.Name, n.State, n.Reason)
		}
	}

	// Alice's job waits: every node is drained.
	s := spec(runtimetest.SharedDir(t), "first", 1, 1, "#!/bin/sh\nsleep 60\n") // its output is opened as alice
	s.Uid, s.Gid, s.User, s.TimeLimitSeconds = int32(alice.UID), int32(alice.GID), alice.User, 3600
	resp, err := asAlice.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.JobId
	name, shorter, longer := "renamed", int64(1800), int64(7200)
	_, err = asBob.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, Name: &name})
	code(err, codes.PermissionDenied, "bob renames alice's job")
	_, err = asAlice.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, Name: &name, TimeLimitSeconds: &shorter})
	code(err, codes.OK, "alice renames her job and shortens its limit")
	_, err = asAlice.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, TimeLimitSeconds: &longer})
	code(err, codes.PermissionDenied, "alice lengthens her job's limit")
	// As in Slurm, Priority=0 holds one's own job (a user's hold, which its
	// owner releases); another priority is an operator's to set.
	_, err = asAlice.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, Priority: proto.Int64(0)})
	code(err, codes.OK, "alice holds her job with Priority=0")
	if j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id}); err != nil || j.Reason != "JobHeldUser" {
		t.Errorf("after alice's Priority=0: %v, %v; want reason JobHeldUser", j.GetReason(), err)
	}
	_, err = asAlice.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, Priority: proto.Int64(5)})
	code(err, codes.PermissionDenied, "alice sets a priority")
	_, err = asAlice.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, Hold: phalanxv1.HoldRequest_HOLD_REQUEST_RELEASE})
	code(err, codes.OK, "alice releases her job")
	job, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.Name != name || job.Spec.TimeLimitSeconds != shorter || job.State != "PENDING" {
		t.Errorf("alice's job: %q, limit %ds, %s; want %q, %ds, PENDING", job.Spec.Name, job.Spec.TimeLimitSeconds, job.State, name, shorter)
	}
	_, err = asCarol.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, TimeLimitSeconds: &longer})
	code(err, codes.OK, "carol (operator) lengthens it")

	// Back in service, the job starts; its owner may still shorten its
	// limit, not lengthen it (timelimit_update_test.go).
	_, err = asBob.UpdateNode(ctx, &phalanxv1.UpdateNodeRequest{Names: c.Nodes, State: "RESUME"})
	code(err, codes.PermissionDenied, "bob resumes the nodes")
	_, err = asCarol.UpdateNode(ctx, &phalanxv1.UpdateNodeRequest{Names: c.Nodes, State: "RESUME"})
	code(err, codes.OK, "carol resumes the nodes")
	testcluster.Eventually(t, 10*time.Second, func() error {
		j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
		if err != nil {
			return err
		}
		if j.State != "RUNNING" || j.Spec.TimeLimitSeconds != longer {
			return fmt.Errorf("job %d is %s with limit %ds; want RUNNING with %ds", id, j.State, j.Spec.TimeLimitSeconds, longer)
		}
		return nil
	})
	more := longer + 60
	_, err = asAlice.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, TimeLimitSeconds: &more})
	code(err, codes.PermissionDenied, "alice lengthens her running job's limit")
}

// scontrol update of what a pending job asks for: checked as a submit is
// (a node count the partition can never give is refused), by Slurm's rules
// for who may change what (a user raises nice, not lowers it; only an
// operator sets a priority), and only while the job is pending. A new
// dependency holds the job back at once; Dependency= removes it.
func TestUpdatePendingJobsRequest(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake", OperatorUsers: []string{"carol"}})
	alice := auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal}
	carol := auth.Identity{User: "carol", UID: 1002, GID: 100, Kind: auth.KindLocal}
	asAlice, asCarol := c.ClientAs(alice), c.ClientAs(carol)
	ctx := context.Background()
	dir := runtimetest.SharedDir(t)
	sub := func(name string) uint64 {
		s := spec(dir, name, 1, 8, "#!/bin/sh\nsleep 60\n") // the whole node
		s.Uid, s.Gid, s.User = int32(alice.UID), int32(alice.GID), alice.User
		resp, err := asAlice.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: s})
		if err != nil {
			t.Fatal(err)
		}
		return resp.JobId
	}
	running := sub("running")
	c.WaitJob(running, 10*time.Second, "RUNNING")
	pending := sub("pending")
	update := func(api phalanxv1.ControllerServiceClient, req *phalanxv1.UpdateJobRequest) error {
		_, err := api.UpdateJob(ctx, req)
		return err
	}
	i32 := func(n int32) *int32 { return &n }
	i64 := func(n int64) *int64 { return &n }
	str := func(s string) *string { return &s }

	if err := update(asAlice, &phalanxv1.UpdateJobRequest{JobId: pending, Nodes: i32(2)}); status.Code(err) == codes.OK {
		t.Error("NumNodes=2 on a 1-node cluster was accepted")
	}
	if err := update(asAlice, &phalanxv1.UpdateJobRequest{JobId: running, Nodes: i32(1)}); err == nil || !strings.Contains(err.Error(), "no longer pending") {
		t.Errorf("NumNodes of a running job: %v", err)
	}
	if err := update(asAlice, &phalanxv1.UpdateJobRequest{JobId: pending, Priority: i64(900)}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("alice sets a priority: %v; want permission denied", err)
	}
	if err := update(asCarol, &phalanxv1.UpdateJobRequest{JobId: pending, Priority: i64(900)}); err != nil {
		t.Errorf("an operator sets a priority: %v", err)
	}
	if err := update(asAlice, &phalanxv1.UpdateJobRequest{JobId: pending, Nice: i32(50)}); err != nil {
		t.Errorf("alice raises her job's nice: %v", err)
	}
	if err := update(asAlice, &phalanxv1.UpdateJobRequest{JobId: pending, Nice: i32(10)}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("alice lowers her job's nice: %v; want permission denied", err)
	}
	// A partition that does not exist is the request's fault, not the job's
	// (whose ID is valid): InvalidArgument, with Slurm's words.
	if err := update(asAlice, &phalanxv1.UpdateJobRequest{JobId: pending, Partition: str("nope")}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "Invalid partition name specified: nope") {
		t.Errorf("Partition=nope: %v; want InvalidArgument, Invalid partition name specified", err)
	}
	if err := update(asAlice, &phalanxv1.UpdateJobRequest{JobId: pending, Qos: str("bogus")}); err == nil || !strings.Contains(err.Error(), "invalid qos") {
		t.Errorf("QOS=bogus: %v", err)
	}
	if err := update(asAlice, &phalanxv1.UpdateJobRequest{JobId: pending, Dependency: str(fmt.Sprintf("afterok:%d", pending))}); err == nil || !strings.Contains(err.Error(), "cannot depend on itself") {
		t.Errorf("a dependency on itself: %v", err)
	}
	if err := update(asAlice, &phalanxv1.UpdateJobRequest{JobId: pending, Dependency: str(fmt.Sprintf("afterok:%d", running))}); err != nil {
		t.Fatal(err)
	}
	wantPending := func(reason string) {
		t.Helper()
		c.Eventually(10*time.Second, func() error {
			j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: pending})
			if err != nil || j.State != "PENDING" || j.Reason != reason {
				return fmt.Errorf("job %d: %s (%s), %v; want PENDING (%s)", pending, j.GetState(), j.GetReason(), err, reason)
			}
			return nil
		})
	}
	wantPending("Dependency")
	j, _ := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: pending})
	if s := j.GetSpec(); s.GetPriority() != 900 || s.GetNice() != 50 || s.GetDependency() != fmt.Sprintf("afterok:%d(unfulfilled)", running) {
		t.Errorf("after the updates: priority %d nice %d dependency %q", s.GetPriority(), s.GetNice(), s.GetDependency())
	}
	if err := update(asAlice, &phalanxv1.UpdateJobRequest{JobId: pending, Dependency: str("")}); err != nil {
		t.Fatal(err)
	}
	wantPending("Resources")
}
