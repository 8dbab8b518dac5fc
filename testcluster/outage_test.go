package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// A majority of the controllers is down for longer than the nodes' lease:
// no heartbeat is answered, so every node's supervisors kill their tasks
// at the lease's end, healthy nodes' as well. One node of the job is also
// cut off meanwhile, and stays so. Once a leader is back, the healthy
// node's agent reports its task fenced at once; the cut node is declared
// lost only after the new leader's grace. The attempt's fault is the lost
// node's alone, not that of the healthy node whose report came first, and
// the job runs again on the healthy node.
func TestMajorityOutageBlamesOnlyLostNodes(t *testing.T) {
	const ttl = 4 * time.Second // a lease of 3 s
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 3, LeafSize: 3, NodeTTL: ttl})
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ticks := filepath.Join(dir, "ticks")
	script := "#!/bin/sh\nwhile true; do now=$(date +%s%N); echo \"$PHX_ATTEMPT $SLURMD_NODENAME $now\" >> " + ticks + "; sleep 0.02; done\n"
	id := submit(t, c, spec(dir, "outage", 2, 8, script))
	job := c.WaitJob(id, 20*time.Second, "RUNNING")
	healthy, cut := job.Alloc[0].Node, job.Alloc[1].Node
	c.Eventually(10*time.Second, func() error {
		if _, err := os.Stat(ticks); err != nil {
			return err // no line yet
		}
		seen := map[string]bool{}
		for _, tk := range readTicks(t, ticks) {
			seen[tk.node] = true
		}
		if !seen[healthy] || !seen[cut] {
			return fmt.Errorf("lines from %v; want both nodes'", seen)
		}
		return nil
	})

	leader := c.LeaderIndex()
	other := follower(t, c)
	c.StopController(leader)
	c.StopController(other)
	c.CutNode(cut)
	// Every task of the attempt is fenced: no line for a while from
	// either node.
	c.Eventually(20*time.Second, func() error {
		last := map[string]int64{}
		for _, tk := range readTicks(t, ticks) {
			last[tk.node] = max(last[tk.node], tk.at)
		}
		for _, n := range []string{healthy, cut} {
			if quiet := time.Since(time.Unix(0, last[n])); quiet < time.Second {
				return fmt.Errorf("%s wrote %s ago", n, quiet.Round(time.Millisecond))
			}
		}
		return nil
	})
	c.StartController(leader)
	c.StartController(other)

	c.Eventually(30*time.Second, func() error {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.Attempt != 1 || j.State != "RUNNING" {
			var fault string
			if as := j.GetAttempts(); len(as) > 0 {
				fault = as[0].FaultNode
			}
			return fmt.Errorf("job %d: %s (%s) attempt %d, attempt 0's fault node %q, %v; want RUNNING in attempt 1 (%s lost, %s healthy)",
				id, j.GetState(), j.GetReason(), j.GetAttempt(), fault, err, cut, healthy)
		}
		return nil
	})
	j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	if a := j.Attempts[0]; a.State != "NODE_FAIL" || a.Cause != "node" || a.FaultNode != cut {
		t.Errorf("attempt 0: %v; want NODE_FAIL, cause node, fault node %s (lost), not %s (healthy)", a, cut, healthy)
	}
	onHealthy := false
	for _, na := range j.Alloc {
		onHealthy = onHealthy || na.Node == healthy
		if na.Node == cut {
			t.Errorf("attempt 1 placed on the lost node %s: %v", cut, j.Alloc)
		}
	}
	if !onHealthy {
		t.Errorf("attempt 1 on %v avoids %s, which only lost its lease", j.Alloc, healthy)
	}
	// The job's events say why it was requeued.
	evs, err := c.Client.ListEvents(context.Background(), &phalanxv1.ListEventsRequest{Jobs: []uint64{id}})
	if err != nil {
		t.Fatal(err)
	}
	var requeues []string
	for _, e := range evs.GetEvents() {
		if e.Kind == "requeued" {
			requeues = append(requeues, e.Message)
		}
	}
	if want := "requeued because node " + cut + " failed: Not responding"; len(requeues) != 1 || !strings.HasPrefix(requeues[0], want) {
		t.Errorf("job %d's requeue events: %q; want one, %q...", id, requeues, want)
	}
	if _, err := c.Client.CancelJob(context.Background(), &phalanxv1.CancelJobRequest{JobIds: []uint64{id}}); err != nil {
		t.Fatal(err)
	}
}
