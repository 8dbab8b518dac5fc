package testcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// TestNodeSetDownRestartsItsJob: an administrator sets DOWN a node under a
// running 2-node job (scontrol update State=DOWN). As Slurm requeues the
// jobs of a node set DOWN, the attempt ends NODE_FAIL with the node at
// fault, and once its agents have stopped its tasks the job runs again as
// attempt 1 on the two other nodes.
func TestNodeSetDownRestartsItsJob(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 3, LeafSize: 3})
	id := submit(t, c, spec(t.TempDir(), "downed", 2, 8, "#!/bin/sh\nexec sleep 600\n"))
	job := c.WaitJob(id, 20*time.Second, "RUNNING")
	down := job.Alloc[1].Node
	ctx := context.Background()
	if _, err := c.Client.UpdateNode(ctx, &phalanxv1.UpdateNodeRequest{Names: []string{down}, State: "DOWN", Reason: "bad PSU"}); err != nil {
		t.Fatal(err)
	}
	c.Eventually(20*time.Second, func() error {
		j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
		if err != nil {
			return err
		}
		if j.State != "RUNNING" || j.Attempt != 1 {
			return fmt.Errorf("job is %s (%s) attempt %d; want RUNNING attempt 1", j.State, j.Reason, j.Attempt)
		}
		for _, a := range j.Alloc {
			if a.Node == down {
				return fmt.Errorf("attempt 1 runs on %s, which is DOWN", down)
			}
		}
		if as := j.GetAttempts(); len(as) == 0 || as[0].GetFaultNode() != down || as[0].GetState() != "NODE_FAIL" {
			return fmt.Errorf("attempt 0: %v; want NODE_FAIL, %s at fault", as, down)
		}
		return nil
	})
}
