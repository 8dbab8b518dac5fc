package controller

import (
	"context"
	"fmt"
	"reflect"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// A cancel retried with its request ID (a lost reply, a failover) answers
// the jobs the first attempt cancelled, by ID or by user, instead of
// "nothing cancelled": the job ended because of this request.
func TestCancelRetriedWithItsRequestID(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	api := &controllerService{s: s}
	ctx := context.Background()
	var ids []uint64
	for i := 0; i < 3; i++ {
		resp, err := s.submit(ctx, testSpec(1, 8), false, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.JobId)
	}
	byID := &phalanxv1.CancelJobRequest{JobIds: ids[:1], RequestId: "by-id"}
	for attempt := 0; attempt < 2; attempt++ {
		resp, err := api.CancelJob(ctx, byID)
		if err != nil || !reflect.DeepEqual(resp.Cancelled, ids[:1]) {
			t.Fatalf("attempt %d of a cancel by ID: %v, %v; want %v", attempt, resp, err, ids[:1])
		}
	}
	// Without a request ID a second cancel reports nothing: the job had
	// ended.
	if resp, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: ids[:1]}); err != nil || len(resp.Cancelled) != 0 {
		t.Errorf("cancel of an ended job without request ID: %v, %v; want nothing cancelled", resp, err)
	}
	byUser := &phalanxv1.CancelJobRequest{User: "alice", RequestId: "by-user"}
	for attempt := 0; attempt < 2; attempt++ {
		resp, err := api.CancelJob(ctx, byUser)
		if err != nil || !reflect.DeepEqual(resp.Cancelled, ids[1:]) {
			t.Fatalf("attempt %d of a cancel by user: %v, %v; want %v", attempt, resp, err, ids[1:])
		}
	}
	if _, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: ids[:1], RequestId: "a\x00b"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("request ID with a NUL byte: %v; want InvalidArgument", err)
	}
}

// scancel -t and -p narrow what is cancelled, by filter and by ID alike;
// an unknown state is refused.
func TestCancelByStateAndPartition(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	api := &controllerService{s: s}
	ctx := context.Background()
	submit := func(gpus int) uint64 {
		resp, err := s.submit(ctx, testSpec(1, gpus), false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.JobId
	}
	running := submit(8)
	eventually(t, 10*time.Second, func() error {
		if j, _ := s.store.Job(cluster.JobID(running)); j.State == cluster.JobPending {
			return fmt.Errorf("job %d still pending", running)
		}
		return nil
	})
	pending := submit(8) // the node is full
	resp, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{running, pending}, States: []string{"PD"}})
	if err != nil || !reflect.DeepEqual(resp.Cancelled, []uint64{pending}) {
		t.Errorf("cancel -t PD of both: %v, %v; want only %d", resp, err, pending)
	}
	other := submit(8)
	if resp, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{Partitions: []string{"nope"}}); err != nil || len(resp.Cancelled) != 0 {
		t.Errorf("cancel -p nope: %v, %v; want nothing", resp, err)
	}
	if resp, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{States: []string{"PENDING"}, Partitions: []string{"gpu"}}); err != nil || !reflect.DeepEqual(resp.Cancelled, []uint64{other}) {
		t.Errorf("cancel -t PENDING -p gpu: %v, %v; want %d", resp, err, other)
	}
	if _, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{States: []string{"SLEEPING"}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("an unknown state: %v; want InvalidArgument", err)
	}
}

// scancel JOBID.STEP: the step's SIGTERM (or --signal's), recorded for the
// job's agents with the step; the job itself runs on.
func TestCancelStep(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	resp, err := s.submit(context.Background(), testSpec(1, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	waitState(t, s, id, cluster.JobConfiguring)
	api := &controllerService{s: s}
	ctx := context.Background()
	for _, req := range []*phalanxv1.CancelJobRequest{
		{JobIds: []uint64{uint64(id)}, Step: proto.Uint32(2)},
		{JobIds: []uint64{uint64(id)}, Step: proto.Uint32(3), Signal: int32(syscall.SIGUSR1)},
	} {
		if out, err := api.CancelJob(ctx, req); err != nil || len(out.Cancelled) != 1 {
			t.Fatalf("%v: %v, %v; want the job signalled", req, out, err)
		}
	}
	j, err := s.store.Job(id)
	if err != nil {
		t.Fatal(err)
	}
	want := []cluster.SignalRequest{{Seq: 1, Signal: 15, Scope: cluster.SignalStep, Step: 2}, {Seq: 2, Signal: int(syscall.SIGUSR1), Scope: cluster.SignalStep, Step: 3}}
	if !reflect.DeepEqual(j.SignalRequests, want) || j.State != cluster.JobConfiguring {
		t.Errorf("job %s with requests %+v; want it running on, with %+v", j.State, j.SignalRequests, want)
	}
	for _, bad := range []*phalanxv1.CancelJobRequest{
		{JobIds: []uint64{uint64(id)}, Step: proto.Uint32(2), Signal: 10, SignalScope: phalanxv1.SignalScope_SIGNAL_SCOPE_BATCH},
		{User: "alice", Step: proto.Uint32(2)},
	} {
		if _, err := api.CancelJob(ctx, bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%v: %v; want InvalidArgument", bad, err)
		}
	}
}
