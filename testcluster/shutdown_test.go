package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// Agents that stop their tasks when they shut down (--stop-tasks-on-exit,
// as phx dev's do) report them LOST as shut down: the job restarts, and,
// no node being at fault, its next attempt may run on the same nodes. On
// two nodes with a job on both, stopped and started again, attempt 1 runs
// there; had the shutdown blamed the nodes, the job would wait for nodes
// it does not avoid, and there are none.
func TestAgentShutdownRestartsTheJobOnTheSameNodes(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2})
	id := submit(t, c, spec(t.TempDir(), "shutdown", 2, 8, "#!/bin/sh\nexec sleep 600\n"))
	job := c.WaitJob(id, 20*time.Second, "RUNNING")
	for _, na := range job.Alloc {
		c.StopAgent(na.Node)
	}
	for _, na := range job.Alloc {
		c.StartAgent(na.Node)
	}
	var j *phalanxv1.Job
	c.Eventually(30*time.Second, func() error {
		var err error
		j, err = c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.Attempt != 1 || j.State != "RUNNING" {
			return fmt.Errorf("job %d: %s attempt %d (%s), %v; want RUNNING in attempt 1", id, j.GetState(), j.GetAttempt(), j.GetReason(), err)
		}
		return nil
	})
	a := j.Attempts[0]
	if a.State != "NODE_FAIL" || a.Cause != "node" || a.FaultNode != "" || !strings.Contains(a.Reason, "node agent shut down") {
		t.Errorf("attempt 0: %v; want NODE_FAIL, cause node, no fault node, the shutdown as its reason", a)
	}
	if _, err := c.Client.CancelJob(context.Background(), &phalanxv1.CancelJobRequest{JobIds: []uint64{id}}); err != nil {
		t.Fatal(err)
	}
}
