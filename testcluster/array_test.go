package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// A job array: one job per index with its SLURM_ARRAY_* variables and
// Slurm's default output name, never more tasks running than its throttle
// (%2) although nodes are free, every task run once.
func TestJobArrayRunsEachIndexWithinItsThrottle(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 4, LeafSize: 4})
	dir := t.TempDir()
	log := filepath.Join(dir, "spans")
	s := spec(dir, "sweep", 1, 8, "#!/bin/sh\n"+
		"echo \"$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX $SLURM_ARRAY_TASK_STEP $SLURM_JOB_ID\"\n"+
		"echo \"start $SLURM_ARRAY_TASK_ID $(date +%s%N)\" >> "+log+"\n"+
		"sleep 0.5\n"+
		"echo \"end $SLURM_ARRAY_TASK_ID $(date +%s%N)\" >> "+log+"\n")
	s.Output = "" // Slurm's default for arrays: slurm-%A_%a.out
	s.Array = "0-10:2%2"
	base := submit(t, c, s)
	for i, task := range []int{0, 2, 4, 6, 8, 10} {
		id := base + uint64(i)
		if j := c.WaitJob(id, 60*time.Second, "COMPLETED", "FAILED", "CANCELLED"); j.State != "COMPLETED" {
			t.Fatalf("task %d (job %d) ended %s (%s)", task, id, j.State, j.Reason)
		}
		out, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("slurm-%d_%d.out", base, task)))
		want := fmt.Sprintf("%d %d 6 0 10 2 %d", base, task, id)
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("task %d: output %q, %v; want %q", task, out, err, want)
		}
	}
	// squeue -j with the array's ID lists all its tasks, as Slurm's.
	list, err := c.Client.ListJobs(context.Background(), &phalanxv1.ListJobsRequest{JobIds: []uint64{base}})
	if err != nil || len(list.Jobs) != 6 {
		t.Errorf("jobs listed for the array's ID: %d, %v; want its 6 tasks", len(list.GetJobs()), err)
	}
	// At no moment were more than 2 tasks running.
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		at    int64
		delta int
	}
	var evs []ev
	starts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		at, _ := strconv.ParseInt(f[2], 10, 64)
		if f[0] == "start" {
			starts[f[1]]++
			evs = append(evs, ev{at, 1})
		} else {
			evs = append(evs, ev{at, -1})
		}
	}
	sort.Slice(evs, func(i, j int) bool {
		return evs[i].at < evs[j].at || evs[i].at == evs[j].at && evs[i].delta < evs[j].delta
	})
	running, most := 0, 0
	for _, e := range evs {
		running += e.delta
		most = max(most, running)
	}
	if most > 2 || len(starts) != 6 {
		t.Errorf("%d tasks ran at once (throttle 2); tasks started: %v", most, starts)
	}
	for task, n := range starts {
		if n != 1 {
			t.Errorf("task %s ran %d times", task, n)
		}
	}
}

// A 10,000-task array is one submit (MaxArraySize permitting); scancel of
// the array's ID cancels every task, and of ID_INDEX one task.
func TestLargeArraySubmitsInOneCall(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake", MaxArraySize: 10001})
	ctx := context.Background()
	s := spec(t.TempDir(), "big", 1, 8, "#!/bin/sh\ntrue\n")
	s.Array = "0-9999"
	start := time.Now()
	base := submit(t, c, s)
	t.Logf("10,000-task array submitted in one call in %s", time.Since(start).Round(time.Millisecond))
	c.WaitJob(base, 10*time.Second, "RUNNING")
	last, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: base + 9999})
	if err != nil || last.GetArrayTask().GetTaskId() != 9999 || last.GetArrayTask().GetArrayJobId() != base || last.State != "PENDING" {
		t.Fatalf("the array's last task: %v, %v", last, err)
	}
	if _, err := c.Client.CancelJob(ctx, &phalanxv1.CancelJobRequest{ArrayTasks: []*phalanxv1.ArrayTasks{{ArrayJobId: base, TaskIds: []int32{5000}}}}); err != nil {
		t.Fatal(err)
	}
	if j := c.WaitJob(base+5000, 10*time.Second, "CANCELLED"); j.State != "CANCELLED" {
		t.Fatalf("task 5000: %s", j.State)
	}
	if j, _ := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: base + 4999}); j.GetState() != "PENDING" {
		t.Errorf("task 4999 is %s: cancelling task 5000 touched it", j.GetState())
	}
	if _, err := c.Client.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{base}}); err != nil {
		t.Fatal(err)
	}
	c.WaitJob(base+9999, 20*time.Second, "CANCELLED")
	s.Array = "0-10001"
	if _, err := c.Client.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: s}); err == nil || !strings.Contains(err.Error(), "MaxArraySize=10001") {
		t.Errorf("an index over MaxArraySize: %v", err)
	}
}

// scontrol update ArrayTaskThrottle=N changes a running array's throttle:
// more of its tasks start at once (phx sends the change to each task).
func TestArrayTaskThrottleUpdate(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 4, LeafSize: 4, Runtime: "fake"})
	ctx := context.Background()
	s := spec(t.TempDir(), "sweep", 1, 8, "#!/bin/sh\nsleep 600\n")
	s.Array = "0-3%1"
	base := submit(t, c, s)
	c.WaitJob(base, 10*time.Second, "RUNNING")
	counts := func() (running, limited int) {
		t.Helper()
		list, err := c.Client.ListJobs(ctx, &phalanxv1.ListJobsRequest{JobIds: []uint64{base}})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range list.Jobs {
			switch {
			case j.State == "RUNNING" || j.State == "CONFIGURING":
				running++
			case j.Reason == "JobArrayTaskLimit":
				limited++
			}
		}
		return running, limited
	}
	testcluster.Eventually(t, 10*time.Second, func() error {
		if r, l := counts(); r != 1 || l != 3 {
			return fmt.Errorf("%d tasks running, %d held by the throttle; want 1 and 3", r, l)
		}
		return nil
	})
	three := int32(3)
	for i := range uint64(4) {
		if _, err := c.Client.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: base + i, ArrayTaskThrottle: &three}); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
	}
	testcluster.Eventually(t, 10*time.Second, func() error {
		if r, l := counts(); r != 3 || l != 1 {
			return fmt.Errorf("%d tasks running, %d held by the throttle; want 3 and 1", r, l)
		}
		return nil
	})
	if j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: base + 3}); err != nil || j.GetArrayTask().GetThrottle() != 3 {
		t.Errorf("the pending task's throttle: %v, %v; want 3", j.GetArrayTask(), err)
	}
	plain := submit(t, c, spec(t.TempDir(), "one", 1, 8, "#!/bin/sh\nsleep 600\n"))
	if _, err := c.Client.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: plain, ArrayTaskThrottle: &three}); err == nil || !strings.Contains(err.Error(), "not a task of a job array") {
		t.Errorf("ArrayTaskThrottle= on a job not in an array: %v", err)
	}
}
