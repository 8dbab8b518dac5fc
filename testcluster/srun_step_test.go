package testcluster_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/testcluster"
)

// srun --jobid: a command run from a login node beside a running job's
// tasks (nvidia-smi on a training job's nodes), through the agents, with a
// step credential the leader signs for each node. Only the job's owner may;
// the command runs as that owner, with the job's environment and GPUs, and
// srun exits as it did.
func TestSrunStepInRunningJob(t *testing.T) {
	alice, bob := localUser(t, "phxstepa"), localUser(t, "phxstepb")
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2, Runtime: "process"})
	dir := userDir(t, alice)
	id, jobID := sbatchAs(t, c, alice, dir, "-N2", "--gpus-per-node=8", "--wrap", "sleep 300")
	job := c.WaitJob(jobID, 20*time.Second, "RUNNING")

	show := `echo "$SLURM_JOB_ID $SLURM_STEP_ID $SLURM_PROCID/$SLURM_NTASKS $SLURMD_NODENAME $(id -un) gpus=$CUDA_VISIBLE_DEVICES"`
	code, out, errOut := phxAs(t, c, alice, dir, nil, "srun", "--jobid", id, "--overlap", "-l", "sh", "-c", show)
	if code != 0 {
		t.Fatalf("srun --jobid: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	slices.Sort(lines)
	if len(lines) != 2 {
		t.Fatalf("srun --jobid %s on 2 nodes: %q", id, lines)
	}
	for rank, line := range lines {
		f := strings.Fields(line)
		want := []string{fmt.Sprintf("%d:", rank), id, "100000", fmt.Sprintf("%d/2", rank), job.Alloc[rank].Node, "phxstepa", "gpus=0,1,2,3,4,5,6,7"}
		if !slices.Equal(f, want) {
			t.Errorf("line %q, want %q", line, strings.Join(want, " "))
		}
	}

	// -w one node, the next step's number, and the command's exit status.
	node := job.Alloc[1].Node
	code, out, errOut = phxAs(t, c, alice, dir, nil, "srun", "--jobid="+id, "-w", node, "sh", "-c", `echo "$SLURMD_NODENAME $SLURM_STEP_ID"; exit 4`)
	if code != 4 || out != node+" 100001\n" {
		t.Errorf("srun --jobid -w %s exiting 4: exit %d, stdout %q, stderr %q", node, code, out, errOut)
	}

	for _, tc := range []struct {
		user  string
		args  []string
		error string
	}{
		{"bob", []string{"srun", "--jobid", id, "id"}, "permission denied: job " + id + " belongs to phxstepa"},
		{"alice", []string{"srun", "--jobid", id, "-w", "nosuchnode", "id"}, "nosuchnode is not one of job " + id + "'s nodes"},
		{"alice", []string{"srun", "--jobid", id, "--gpus=1", "id"}, "--gpus does not apply with --jobid"},
		{"alice", []string{"srun", "--jobid", "999999", "id"}, "Invalid job id specified"},
	} {
		as := alice
		if tc.user == "bob" {
			as = bob
		}
		code, out, errOut := phxAs(t, c, as, dir, nil, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.error) {
			t.Errorf("%s: phx %s: exit %d, stdout %q, stderr %q; want an error saying %q", tc.user, strings.Join(tc.args, " "), code, out, errOut, tc.error)
		}
	}

	// A step ends with its job; once the job has ended, no step runs in it.
	type result struct {
		code     int
		out, err string
	}
	running := make(chan result, 1)
	go func() {
		code, out, errOut := phxAs(t, c, alice, dir, nil, "srun", "--jobid", id, "-w", node, "sh", "-c", "echo started; exec sleep 60")
		running <- result{code, out, errOut}
	}()
	time.Sleep(2 * time.Second)
	if code, _, errOut := phxAs(t, c, alice, dir, nil, "scancel", id); code != 0 {
		t.Fatalf("scancel: %s", errOut)
	}
	c.WaitJob(jobID, 20*time.Second, "CANCELLED")
	select {
	case r := <-running:
		if r.code != 143 || !strings.Contains(r.out, "started\n") || !strings.Contains(r.out, "ended: stopping the step") {
			t.Errorf("a step whose job was cancelled: exit %d, stdout %q, stderr %q; want 143 and why", r.code, r.out, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a step went on 20 s after its job was cancelled")
	}
	code, _, errOut = phxAs(t, c, alice, dir, nil, "srun", "--jobid", id, "true")
	if code == 0 || !strings.Contains(errOut, "steps run only in a running job") {
		t.Errorf("srun --jobid into an ended job: exit %d, %q", code, errOut)
	}
}

// srun -K in a batch script: a task that exits non-zero stops the step's
// other tasks, on its node and on the job's other nodes (through scancel
// JOBID.STEP), and no others: a step running beside it goes on. A node
// whose srun comes to the step after that (node 0, waiting for the step's
// mark) starts none of its tasks. The script goes on after srun, and its
// next step runs.
func TestSrunKillOnBadExit(t *testing.T) {
	user := localUser(t, "phxkillbad")
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2, Runtime: "process", ClientBinary: buildPhx(t)})
	dir := userDir(t, user)
	script := `#!/bin/sh
#SBATCH -N 2 --gpus-per-node=8 --ntasks-per-node=2 -o out-%j-%n
srun -n 2 --ntasks-per-node=1 sh -c 'sleep 6; echo "step $SLURM_STEP_ID went on"' &
beside=$!
sleep 1 # step 0 numbered first on every node
if [ "$SLURM_NODEID" = 0 ]; then # late: node 1's task 3 has stopped step 1
	i=0
	until ls "$PHX_STEP_DIR"/signal.1.* >/dev/null 2>&1 || [ $i -ge 200 ]; do sleep 0.1; i=$((i + 1)); done
fi
srun -K sh -c 'if [ "$SLURM_PROCID" = 3 ]; then exit 3; fi; sleep 60; echo "task $SLURM_PROCID survived"'
echo "srun exited $?"
wait $beside
echo "step 0 exited $?"
srun -n 2 --ntasks-per-node=1 sh -c 'echo "step $SLURM_STEP_ID ran"'
`
	id, jobID := sbatchAs(t, c, user, dir, "--wrap", script)
	// Well before the tasks' 60 s: the bad exit stopped them.
	if job := c.WaitJob(jobID, 30*time.Second, "COMPLETED", "FAILED", "CANCELLED"); job.State != "COMPLETED" {
		t.Fatalf("job ended %s (%s): the script goes on after srun", job.State, job.Reason)
	}
	for rank := range 2 {
		raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out-%s-%d", id, rank)))
		if err != nil {
			t.Fatal(err)
		}
		data := string(raw)
		if strings.Contains(data, "survived") || !strings.Contains(data, "srun exited 143") {
			t.Errorf("node %d's output %q: want no task surviving and srun exiting 143 (a task killed by SIGTERM)", rank, data)
		}
		for _, want := range []string{"step 0 went on", "step 0 exited 0", "step 2 ran"} {
			if !strings.Contains(data, want) {
				t.Errorf("node %d's output %q: want %q (the job's other steps are not the -K step's)", rank, data, want)
			}
		}
		if rank == 1 && (!strings.Contains(data, "task 3 exited with status 3: stopping the step's tasks") || strings.Contains(data, "scancel could not")) {
			t.Errorf("node 1's output %q: want srun saying why it stopped the step, and its scancel going through", data)
		}
		if rank == 0 && !strings.Contains(data, fmt.Sprintf("step %s.1 was cancelled (signal 15): its tasks do not start", id)) {
			t.Errorf("node 0's output %q: want srun refusing to start the cancelled step's tasks", data)
		}
	}
}
