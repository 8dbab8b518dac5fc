package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// A dependency on a job purged from the history is taken and holds, as
// Slurm lifts it; one on a job ID never issued is refused as a typo.
func TestDependencyOnAPurgedJob(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	api := &controllerService{s: s}
	ctx := context.Background()
	held := testSpec(1, 8)
	held.Hold = true
	gone, err := s.submit(ctx, held, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	arr := testSpec(1, 8)
	arr.Hold, arr.Array = true, "0-2"
	array, err := s.submit(ctx, arr, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.propose(ctx, fsm.Expire{Retention: store.Retention{HistoryBefore: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.JobRecord(cluster.JobID(gone.JobId)); err == nil {
		t.Fatalf("job %d still known after Expire", gone.JobId)
	}
	for _, dep := range []string{
		fmt.Sprintf("afterok:%d", gone.JobId),
		fmt.Sprintf("afternotok:%d", gone.JobId),
		fmt.Sprintf("afterok:%d_1", array.JobId),
	} {
		spec := testSpec(1, 8)
		spec.Hold, spec.Dependency = true, dep
		resp, err := s.submit(ctx, spec, false, nil)
		if err != nil {
			t.Errorf("--dependency=%s on a purged job: %v; want taken", dep, err)
			continue
		}
		j, _ := s.store.JobRecord(cluster.JobID(resp.JobId))
		if st := j.Dependency.Eval(j, s.gate.depView(), time.Now()); st != cluster.DepSatisfied {
			t.Errorf("--dependency=%s on a purged job: %v; want satisfied", dep, st)
		}
	}
	next := uint64(s.store.NextJobID())
	for _, dep := range []string{fmt.Sprintf("afterok:%d", next+10), fmt.Sprintf("afterok:%d_1", next+10)} {
		spec := testSpec(1, 8)
		spec.Dependency = dep
		if _, err := s.submit(ctx, spec, false, nil); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("--dependency=%s, never issued: %v; want refused", dep, err)
		}
	}
}
