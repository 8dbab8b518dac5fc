package testcluster_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/testcluster"
)

// A Slurm DDP script of several tasks per node, submitted with the real
// sbatch: the batch script runs once per node, and srun in it starts that
// node's tasks, numbered node by node, each with its own two GPUs; srun
// -N1 -n1 runs once in all.
func TestTasksPerNodeWithTheirOwnGPUs(t *testing.T) {
	user := localUser(t, "phxtasks")
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2, Runtime: "process"})
	dir := userDir(t, user)
	script := `#!/bin/sh
#SBATCH -N 2 --ntasks-per-node=4 --gpus-per-task=2 -c 3 -o tasks-%j-%n.out
echo batch $SLURM_PROCID $SLURM_NTASKS $SLURM_TASKS_PER_NODE $SLURM_CPUS_PER_TASK $SLURM_JOB_GPUS $SLURM_SUBMIT_HOST
srun sh -c 'echo task $SLURM_PROCID $SLURM_LOCALID $CUDA_VISIBLE_DEVICES $SLURM_STEP_ID $WORLD_SIZE'
srun -N1 -n1 sh -c 'echo once $SLURM_PROCID $SLURM_STEP_ID'
`
	if err := os.WriteFile(filepath.Join(dir, "ddp.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	_, id := sbatchAs(t, c, user, dir, "ddp.sh")
	if job := c.WaitJob(id, 30*time.Second, "COMPLETED", "FAILED"); job.State != "COMPLETED" {
		t.Fatalf("job ended %s (%s)", job.State, job.Reason)
	}
	host, _ := os.Hostname()
	for rank := range 2 {
		data, err := os.ReadFile(filepath.Join(dir, "tasks-"+strconv.FormatUint(id, 10)+"-"+strconv.Itoa(rank)+".out"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		var batch []string
		var tasks, once []string
		gpus := map[string]bool{}
		for _, l := range lines {
			f := strings.Fields(l)
			switch f[0] {
			case "batch":
				batch = f[1:]
			case "task":
				tasks = append(tasks, strings.Join([]string{f[1], f[2], f[4], f[5]}, " "))
				for _, g := range strings.Split(f[3], ",") {
					gpus[g] = true
				}
				if len(strings.Split(f[3], ",")) != 2 {
					t.Errorf("rank %d: task %s has GPUs %s, want 2", rank, f[1], f[3])
				}
			case "once":
				once = append(once, strings.Join(f[1:], " "))
			}
		}
		if len(batch) != 6 || batch[0] != strconv.Itoa(rank*4) || batch[1] != "8" || batch[2] != "4(x2)" || batch[3] != "3" ||
			len(strings.Split(batch[4], ",")) != 8 || batch[5] != host {
			t.Errorf("rank %d: batch line %q; want its first task %d, 8 tasks, 4(x2), 3 CPUs per task, 8 GPUs, submit host %s", rank, batch, rank*4, host)
		}
		slices.Sort(tasks)
		var want []string
		for l := range 4 {
			want = append(want, strconv.Itoa(rank*4+l)+" "+strconv.Itoa(l)+" 0 8")
		}
		if !slices.Equal(tasks, want) {
			t.Errorf("rank %d: tasks (PROCID LOCALID STEP WORLD_SIZE) %q, want %q", rank, tasks, want)
		}
		if len(gpus) != 8 {
			t.Errorf("rank %d: the 4 tasks had %d distinct GPUs, want 8 (2 each, none shared)", rank, len(gpus))
		}
		if wantOnce := []string{"0 1"}[:1-rank]; !slices.Equal(once, wantOnce) {
			t.Errorf("rank %d: srun -N1 -n1 printed %q, want %q", rank, once, wantOnce)
		}
	}
}
