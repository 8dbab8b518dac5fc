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

// scancel --signal reaches a running job without ending it: by default
// its processes but the batch script, with -b the batch script alone. Each
// request is delivered once, also when the agent restarts under the task.
func TestScancelSignal(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, LeafSize: 1, AgentsKeepTasks: true})
	dir := t.TempDir()
	got := filepath.Join(dir, "got")
	// The child says it started once its trap is set: a USR1 before would
	// kill it.
	script := "#!/bin/sh\n" +
		"trap 'echo batch-usr2 >> " + got + "' USR2\n" +
		"sh -c 'trap \"echo child-usr1 >> " + got + "\" USR1; echo started > " + dir + "/started; while true; do sleep 0.1; done' &\n" +
		"while true; do sleep 0.1; done\n"
	id := submit(t, c, spec(dir, "sig", 1, 8, script))
	job := c.WaitJob(id, 20*time.Second, "RUNNING")
	c.Eventually(10*time.Second, func() error {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err
	})
	ctx := context.Background()
	lines := func() string {
		b, _ := os.ReadFile(got)
		return strings.TrimSpace(string(b))
	}
	r, err := c.Client.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{id}, Signal: 10, RequestId: "sig-1"})
	if err != nil || len(r.Cancelled) != 1 {
		t.Fatalf("scancel -s USR1: %v, %v", r, err)
	}
	c.Eventually(10*time.Second, func() error {
		if lines() != "child-usr1" {
			return fmt.Errorf("the job saw %q, want child-usr1", lines())
		}
		return nil
	})
	// A retry of the same request delivers nothing more.
	if _, err := c.Client.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{id}, Signal: 10, RequestId: "sig-1"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Client.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{id}, Signal: 12,
		SignalScope: phalanxv1.SignalScope_SIGNAL_SCOPE_BATCH})
	if err != nil {
		t.Fatal(err)
	}
	c.Eventually(10*time.Second, func() error {
		if lines() != "child-usr1\nbatch-usr2" {
			return fmt.Errorf("the job saw %q, want child-usr1 then batch-usr2", lines())
		}
		return nil
	})
	// The agent restarts under the task: it takes it over and sends none
	// of the requests again.
	c.StopAgent(job.Alloc[0].Node)
	c.StartAgent(job.Alloc[0].Node)
	c.WaitNodes(1)
	time.Sleep(time.Second)
	if lines() != "child-usr1\nbatch-usr2" {
		t.Errorf("after the agent's restart the job saw %q: a request was delivered twice", lines())
	}
	if j, _ := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id}); j.GetState() != "RUNNING" || j.GetAttempt() != 0 {
		t.Errorf("job %d is %s in attempt %d; signals must not end it", id, j.GetState(), j.GetAttempt())
	}
	if _, err := c.Client.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{id}}); err != nil {
		t.Fatal(err)
	}
}
