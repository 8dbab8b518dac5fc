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
	"github.com/phalanx-hpc/phalanx/store"
)

// A replica alone in its cluster raises the state's feature level to its
// release's as it takes over: nobody else has to know it.
func TestLoneReplicaRaisesTheFeatureLevel(t *testing.T) {
	s := newTestServer(t, Config{})
	if got := s.store.FeatureLevel(); got != store.FeatureLevel {
		t.Errorf("feature level %d once the lone replica leads; want %d", got, store.FeatureLevel)
	}
}

// Below a feature level, the leader proposes nothing that a replica of an
// earlier release would apply otherwise (it ignores new fields): a task
// reported fenced is proposed as lost, blaming its node, and a NumNodes=
// that would split a job's -G total again is refused until the
// controllers are upgraded. Here the replica reports level 0, as a
// cluster with a member of an earlier release is held at.
func TestFeatureLevelGatesWhatTheLeaderProposes(t *testing.T) {
	zero := uint64(0)
	s := newTestServer(t, Config{FeatureLevel: &zero})
	if got := s.store.FeatureLevel(); got != 0 {
		t.Fatalf("feature level %d; want 0, held by the replica's", got)
	}
	register(t, s, nil, "n1", "n2")
	ctx := context.Background()
	resp, err := s.submit(ctx, testSpec(1, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	j := waitState(t, s, id, cluster.JobConfiguring)
	node := j.Alloc.Nodes[0].Node
	ns := &nodeService{s: s}
	if _, err := ns.ReportTaskStatus(ctx, &phalanxv1.ReportTaskStatusRequest{
		Node: node, JobId: resp.JobId, State: string(cluster.TaskLost),
		Message: `task "phx-1-0-0": killed when the node's lease ended (no controller answered its agent in time)`, Fenced: true,
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if j, _ := s.store.Job(id); j.Attempt != 1 || len(j.Attempts) == 0 || j.Attempts[0].FaultNode != node {
			return errors.New("the fenced task's node is not at fault")
		}
		return nil
	})

	spec := testSpec(1, 8)
	spec.Hold, spec.RequestForm = true, &phalanxv1.RequestForm{Gpus: true, GpusSplit: true}
	held, err := s.submit(ctx, spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.updateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: held.JobId, Nodes: proto.Int32(2)})
	if !errors.Is(err, cluster.ErrUnsatisfiable) || !strings.Contains(err.Error(), "finish upgrading the controllers first") {
		t.Errorf("NumNodes=2 of a -G 8 job at feature level 0: %v; want refused until the controllers are upgraded", err)
	}
	if j, _ := s.store.Job(cluster.JobID(held.JobId)); j.Nodes != 1 || j.GPUsPerNode != 8 {
		t.Errorf("job %d after the refused update: %d nodes of %d GPUs; want 1 of 8", held.JobId, j.Nodes, j.GPUsPerNode)
	}
}
