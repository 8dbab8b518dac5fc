package controller

import (
	"context"
	"strings"
	"testing"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// A job requeued while its tasks still stop is refused a second requeue
// with what is going on (it runs again once they have stopped), not as a
// job that has ended and must be submitted again.
func TestRequeueWhileRequeued(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	ctx := context.Background()
	resp, err := s.submit(ctx, testSpec(1, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	waitState(t, s, id, cluster.JobConfiguring)
	if _, err := (&nodeService{s: s}).ReportTaskStatus(ctx, &phalanxv1.ReportTaskStatusRequest{
		Node: "n1", JobId: uint64(id), State: string(cluster.TaskRunning)}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, id, cluster.JobRunning)
	if _, err := s.requeue(ctx, []uint64{uint64(id)}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, id, cluster.JobRequeued) // its task has not reported its end
	_, err = s.requeue(ctx, []uint64{uint64(id)})
	if err == nil || !strings.Contains(err.Error(), "requeued already") || strings.Contains(err.Error(), "submit it again") {
		t.Errorf("a second requeue: %v; want it said that the job is requeued already", err)
	}
}
