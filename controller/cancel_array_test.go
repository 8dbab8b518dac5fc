package controller

import (
	"context"
	"reflect"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// A cancel of array tasks cancels those the array has and skips the
// others, as Slurm does (scancel 1_[20-24] with 21-23 unknown cancels 20
// and 24); only a list that names no task at all is not found. A task
// that has ended is named and left as it is, so a retry with the request
// ID answers what the first attempt cancelled.
func TestCancelArrayTasksSkipsUnknownOnes(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	api := &controllerService{s: s}
	ctx := context.Background()
	spec := testSpec(1, 8)
	spec.Array = "0-4:2,5" // indices 0, 2, 4, 5: jobs base to base+3
	resp, err := s.submit(ctx, spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := resp.JobId
	tasks := func(ids ...int32) []*phalanxv1.ArrayTasks {
		return []*phalanxv1.ArrayTasks{{ArrayJobId: base, TaskIds: ids}}
	}
	req := &phalanxv1.CancelJobRequest{ArrayTasks: tasks(1, 2, 3, 5, 9), RequestId: "tasks"}
	for attempt := 0; attempt < 2; attempt++ {
		got, err := api.CancelJob(ctx, req)
		if want := []uint64{base + 1, base + 3}; err != nil || !reflect.DeepEqual(got.GetCancelled(), want) {
			t.Fatalf("attempt %d: cancel of tasks 1,2,3,5,9: %v, %v; want jobs %v (tasks 2 and 5)", attempt, got, err, want)
		}
	}
	for _, id := range []uint64{base, base + 2} {
		if j, _ := s.store.JobRecord(cluster.JobID(id)); j.State.Terminal() {
			t.Errorf("job %d (task %d) is %s: it was not named", id, j.Array.TaskID, j.State)
		}
	}
	if _, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{ArrayTasks: tasks(1, 3, 7)}); status.Code(err) != codes.NotFound {
		t.Errorf("cancel of tasks the array does not have: %v; want NotFound", err)
	}
	if got, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{ArrayTasks: tasks(2)}); err != nil || len(got.Cancelled) != 0 {
		t.Errorf("cancel of a task that has ended: %v, %v; want nothing cancelled, no error", got, err)
	}
	if _, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{ArrayTasks: []*phalanxv1.ArrayTasks{{ArrayJobId: base + 99, TaskIds: []int32{0}}}}); status.Code(err) != codes.NotFound {
		t.Errorf("cancel of a task of an array that does not exist: %v; want NotFound", err)
	}
}
