package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/checkpoint"
	"github.com/phalanx-hpc/phalanx/internal/fakegpu"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// A 2-node job commits checkpoint steps 1 to 3; its agents copy them to
// the job's store and the controller records step 3 complete. Step 3 is
// then torn in the store (a rank's manifest lost) and one of the job's
// nodes fails: it is cut off from the controllers, one of its GPUs has an
// XID that needs a reset, or one of its RDMA links goes down. The job restarts on healthy nodes, each rank
// staged in with its own files of step 2, the newest complete step, and
// step 1 was pruned (the store keeps 2 steps). The test logs the time from
// the fault to the job's first attempt ending, and to the second running.
//
// In "xid-corrupt", step 3 is not torn but corrupt: rank 1's file has its
// size and a wrong byte, which only staging finds. Attempt 1 starts from
// step 3; rank 1's agent finds the corruption, marks it in the store and
// fails its launch; the attempt ends (cause checkpoint) and attempt 2
// resumes every rank from step 2.
func TestRestartResumesFromLatestCompleteCheckpoint(t *testing.T) {
	for _, fault := range []string{"cut", "xid", "link", "xid-corrupt"} {
		t.Run(fault, func(t *testing.T) { resumeAfter(t, fault) })
	}
}

func resumeAfter(t *testing.T, fault string) {
	c := testcluster.New(t, testcluster.Options{Nodes: 3, LeafSize: 3, NodeTTL: 4 * time.Second})
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
if [ -n "$PHX_RESUME_STEP" ]; then
	echo "step=$PHX_RESUME_STEP data=$(cat "$PHX_RESUME_FROM/model/state")" > ` + dir + `/resumed-$SLURM_PROCID
	exec sleep 600
fi
for step in 1 2 3; do
	mkdir -p "$PHX_CKPT_DIR/$step/model"
	echo "rank$SLURM_PROCID-step$step" > "$PHX_CKPT_DIR/$step/model/state"
	touch "$PHX_CKPT_DIR/$step/` + checkpoint.Marker + `"
	sleep 0.2
done
exec sleep 600
`
	s := spec(dir, "ckpt", 2, 8, script)
	s.CheckpointDir = store
	id := submit(t, c, s)
	job := c.WaitJob(id, 20*time.Second, "RUNNING")
	c.Eventually(20*time.Second, func() error {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.CheckpointStep == nil || j.GetCheckpointStep() != 3 {
			return fmt.Errorf("job %d: checkpoint step %v, %v; want 3", id, j.CheckpointStep, err)
		}
		return nil
	})
	c.Eventually(10*time.Second, func() error {
		if steps, err := checkpoint.Steps(store); err != nil || fmt.Sprint(steps) != "[2 3]" {
			return fmt.Errorf("steps in the store: %v, %v; want [2 3] (step 1 pruned)", steps, err)
		}
		return nil
	})
	damaged, resumedIn := filepath.Join(store, "step-3", "rank-1", checkpoint.ManifestFile), int32(1)
	if fault == "xid-corrupt" {
		damaged, resumedIn = filepath.Join(store, "step-3", "rank-1", "model", "state"), 2
		b, err := os.ReadFile(damaged)
		if err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0x20 // same size: only the checksum tells
		if err := os.WriteFile(damaged, b, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Remove(damaged); err != nil {
		t.Fatal(err)
	}
	faultAt := time.Now()
	switch fault {
	case "cut":
		c.CutNode(job.Alloc[1].Node)
	case "xid", "xid-corrupt":
		c.InjectGPUFault(job.Alloc[1].Node, fakegpu.Fault{Kind: fakegpu.XID, GPU: 2, XID: 48})
	case "link":
		c.SetLink(job.Alloc[1].Node, "mlx5_1", false)
	}
	var detected time.Duration
	c.Eventually(30*time.Second, func() error {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.State == "RUNNING" && j.Attempt == 0 {
			return fmt.Errorf("job %d still %s in attempt 0, %v", id, j.GetState(), err)
		}
		detected = time.Since(faultAt)
		return nil
	})
	for rank := range 2 {
		path := filepath.Join(dir, fmt.Sprintf("resumed-%d", rank))
		want := fmt.Sprintf("step=2 data=rank%d-step2", rank)
		c.Eventually(30*time.Second, func() error {
			b, err := os.ReadFile(path)
			if err != nil || strings.TrimSpace(string(b)) != want {
				return fmt.Errorf("rank %d after the restart: %q, %v; want %q", rank, b, err, want)
			}
			return nil
		})
	}
	c.Eventually(10*time.Second, func() error {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.Attempt != resumedIn || j.State != "RUNNING" {
			return fmt.Errorf("job %d: %s attempt %d, %v; want RUNNING in attempt %d", id, j.GetState(), j.GetAttempt(), err, resumedIn)
		}
		if a := j.Attempts[0]; a.Cause != "node" || a.FaultNode != job.Alloc[1].Node {
			return fmt.Errorf("attempt 0: %v; want cause node on %s", a, job.Alloc[1].Node)
		}
		if resumedIn == 2 {
			if a := j.Attempts[1]; a.Cause != "checkpoint" || a.FaultNode != "" {
				return fmt.Errorf("attempt 1: %v; want cause checkpoint, no node at fault", a)
			}
		}
		return nil
	})
	// The job's events: step 3 complete, then skipped as torn at the
	// restart, by every rank's agent.
	c.Eventually(10*time.Second, func() error {
		evs, err := c.Client.ListEvents(context.Background(), &phalanxv1.ListEventsRequest{Jobs: []uint64{id}})
		var kinds []string
		for _, e := range evs.GetEvents() {
			if e.Kind == "checkpoint-skipped" && !strings.Contains(e.Message, "step 3 skipped") {
				return fmt.Errorf("skip event %q", e.Message)
			}
			if e.Kind == "checkpoint-skipped" && fault == "xid-corrupt" && !strings.Contains(e.Message, "corrupt") {
				return fmt.Errorf("skip event %q does not say the step was corrupt", e.Message)
			}
			kinds = append(kinds, e.Kind)
		}
		if err != nil || !slices.Contains(kinds, "checkpoint") || !slices.Contains(kinds, "checkpoint-skipped") {
			return fmt.Errorf("job %d's events: %v, %v; want its checkpoints and the torn step skipped", id, kinds, err)
		}
		return nil
	})
	t.Logf("%s on %s: attempt 0 ended %s after the fault; attempt %d running from step 2 %s after it",
		fault, job.Alloc[1].Node, detected.Round(time.Millisecond), resumedIn, time.Since(faultAt).Round(time.Millisecond))
	if _, err := c.Client.CancelJob(context.Background(), &phalanxv1.CancelJobRequest{JobIds: []uint64{id}}); err != nil {
		t.Fatal(err)
	}
}

// An agent restarted under a running task takes over its checkpoint
// copies: a step copied before the restart is not copied again (its
// manifest is the one written before), the next step is copied, and the
// controller records it.
func TestRestartedAgentDoesNotCopyStepsAgain(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, LeafSize: 1, AgentsKeepTasks: true})
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
commit() { mkdir -p "$PHX_CKPT_DIR/$1"; echo "step $1" > "$PHX_CKPT_DIR/$1/w"; touch "$PHX_CKPT_DIR/$1/` + checkpoint.Marker + `"; }
commit 1
while [ ! -e ` + dir + `/go ]; do sleep 0.05; done
commit 2
exec sleep 600
`
	s := spec(dir, "ckpt-adopt", 1, 8, script)
	s.CheckpointDir = store
	id := submit(t, c, s)
	job := c.WaitJob(id, 20*time.Second, "RUNNING")
	manifest := filepath.Join(store, "step-1", "rank-0", checkpoint.ManifestFile)
	var before []byte
	c.Eventually(20*time.Second, func() error {
		var err error
		before, err = os.ReadFile(manifest)
		return err
	})
	c.StopAgent(job.Alloc[0].Node)
	c.StartAgent(job.Alloc[0].Node)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.Eventually(20*time.Second, func() error {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.GetCheckpointStep() != 2 || j.State != "RUNNING" || j.Attempt != 0 {
			return fmt.Errorf("job %d: %s attempt %d, checkpoint step %v, %v; want step 2 recorded in attempt 0", id, j.GetState(), j.GetAttempt(), j.CheckpointStep, err)
		}
		return nil
	})
	after, err := os.ReadFile(manifest)
	if err != nil || string(after) != string(before) {
		t.Errorf("step 1's manifest changed across the agent's restart (%v): copied again\nbefore %s\nafter  %s", err, before, after)
	}
	if _, err := c.Client.CancelJob(context.Background(), &phalanxv1.CancelJobRequest{JobIds: []uint64{id}}); err != nil {
		t.Fatal(err)
	}
}
