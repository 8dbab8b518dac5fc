package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// lowScript runs long on its first attempt and finishes at once on the
// next, printing the attempt it ran as.
const lowScript = `#!/bin/sh
if [ "$PHX_ATTEMPT" = 0 ]; then exec sleep 120; fi
echo attempt=$PHX_ATTEMPT restarts=$SLURM_RESTART_COUNT
`

// TestHighQoSJobPreemptsAndRequeuesLowQoSJob: a low-QoS job fills every
// node of a PreemptMode=REQUEUE partition; a high-QoS job arrives. The low
// job's tasks are stopped, it is requeued (PENDING, attempt 1), the high
// job runs, and the low job runs again once the high one has ended, as new
// tasks of attempt 1.
func TestHighQoSJobPreemptsAndRequeuesLowQoSJob(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2, Partitions: []*cluster.Partition{{
		Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp, PreemptMode: "REQUEUE",
	}}})
	dir := t.TempDir()
	lowSpec := spec(dir, "low", 2, 8, lowScript)
	lowSpec.Qos = "low"
	low := submit(t, c, lowSpec)
	c.WaitJob(low, 20*time.Second, "RUNNING")

	highSpec := spec(dir, "high", 1, 8, "#!/bin/sh\nsleep 1\n")
	highSpec.Qos = "high"
	high := submit(t, c, highSpec)

	// The low job goes back to the queue as attempt 1 before the high one runs.
	c.Eventually(20*time.Second, func() error {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: low})
		if err != nil {
			return err
		}
		if j.Attempt < 1 || !j.Requeued {
			return fmt.Errorf("low job is %s attempt %d requeued %v; want requeued as attempt 1", j.State, j.Attempt, j.Requeued)
		}
		return nil
	})
	h := c.WaitJob(high, 20*time.Second, "COMPLETED", "FAILED")
	if h.State != "COMPLETED" {
		t.Fatalf("high job ended %s (%s)", h.State, h.Reason)
	}
	l := c.WaitJob(low, 30*time.Second, "COMPLETED", "FAILED")
	if l.State != "COMPLETED" || l.Attempt != 1 {
		t.Fatalf("low job ended %s (%s) as attempt %d; want COMPLETED as attempt 1", l.State, l.Reason, l.Attempt)
	}
	if l.StartTime.AsTime().Before(h.StartTime.AsTime()) {
		t.Errorf("low job's attempt 1 started at %v, before the high job (%v)", l.StartTime.AsTime(), h.StartTime.AsTime())
	}
	for rank := 0; rank < 2; rank++ {
		out, err := os.ReadFile(filepath.Join(dir, "low-"+strconv.FormatUint(low, 10)+"-"+strconv.Itoa(rank)+".out"))
		if err != nil || !strings.Contains(string(out), "attempt=1 restarts=1") {
			t.Errorf("low job rank %d output %q, %v; want it to have run as attempt 1", rank, out, err)
		}
	}
}
