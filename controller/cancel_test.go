package controller

import (
	"context"
	"reflect"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
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
