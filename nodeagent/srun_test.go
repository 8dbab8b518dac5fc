package nodeagent

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestSrunShimRunsItsCommandHere(t *testing.T) {
	bin, err := writeJobBin(t.TempDir(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	srun := filepath.Join(bin, "srun")
	if fi, err := os.Stat(srun); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("srun: %v %v", fi, err)
	}
	tmp := t.TempDir() // where srun counts steps without PHX_STEP_DIR
	for _, tc := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"echo", "hi"}, "hi\n", "", 0},
		{[]string{"-N", "1", "--ntasks-per-node=1", "--mpi=none", "-l", "echo", "a", "-n", "b"}, "0: a -n b\n", "", 0},
		{[]string{"-N1", "--gpus-per-node", "8", "--", "echo", "x"}, "x\n", "", 0},
		{[]string{"-N", "2", "echo", "x"}, "", "srun: error: Only allocated 1 nodes asked for 2", 1},
		{[]string{"--ntasks-per-node=3", "-O", "echo", "y"}, "y\ny\ny\n", "", 0}, // more tasks than the job's: -O
		{[]string{"-n", "2", "--overcommit", "echo", "z"}, "z\nz\n", "", 0},
		{[]string{"--gpus-per-task=1", "echo", "g"}, "", "srun: error: 1 task(s) of 1 GPU(s) on this node, which has 0 for the job", 1},
		{[]string{"-K", "echo", "k"}, "k\n", "", 0}, // -K takes no word: echo is the command
		{[]string{"-K1", "--kill-on-bad-exit=1", "echo", "k1"}, "k1\n", "", 0},
		{[]string{"-l", "sh", "-c", "echo a; echo b >&2; printf c; exit 4"}, "0: a\n0: b\n0: c\n", "srun: error: n1: task 0: Exited with exit code 4\n", 4},
		{[]string{"--container-image=nvcr.io/nvidia/pytorch:24.05", "python", "x.py"}, "", "srun: error: --container-image is not supported inside a Phalanx job", 1},
		{[]string{"-N"}, "", "srun: option requires an argument -- 'N'", 1},
		{[]string{"-N", "0", "echo"}, "", "srun: error: -N=0: give a positive count", 1},
		{[]string{"sh", "-c", "exit 3"}, "", "srun: error: n1: task 0: Exited with exit code 3\n", 3},
		{[]string{"sh", "-c", "kill -9 $$"}, "", "srun: error: n1: task 0: Killed\n", 137},
		{[]string{"-N", "2"}, "", "srun: error: no command to run", 1},
	} {
		cmd := exec.Command("/bin/sh", append([]string{srun}, tc.args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + tmp, "SLURM_NNODES=1", "SLURM_NODEID=0", "SLURMD_NODENAME=n1"}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("srun %v: %v", tc.args, err)
		}
		if out.String() != tc.stdout || code != tc.code || !strings.HasPrefix(errb.String(), tc.stderr) || (tc.stderr == "" && errb.Len() > 0) {
			t.Errorf("srun %q: stdout %q stderr %q exit %d; want %q, %q..., %d", tc.args, out.String(), errb.String(), code, tc.stdout, tc.stderr, tc.code)
		}
	}
}

func TestPrependPath(t *testing.T) {
	env := prependPath([]string{"A=1", "PATH=/usr/bin:/bin"}, "/job/bin")
	if env[1] != "PATH=/job/bin:/usr/bin:/bin" {
		t.Errorf("PATH = %q", env[1])
	}
	if env := prependPath([]string{"A=1"}, "/job/bin"); len(env) != 1 || env[0] != "A=1" {
		t.Errorf("without a PATH the environment changed: %v", env)
	}
}

// srun in a job of several nodes runs on the nodes -N, -n and -w select,
// and nothing (successfully) on the others, so that `srun -N1 cmd` runs
// cmd once in all, as in Slurm.
func TestSrunShimSelectsNodes(t *testing.T) {
	bin, err := writeJobBin(t.TempDir(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir() // where srun counts steps without PHX_STEP_DIR
	// A stand-in for the phx link: scontrol show hostnames n[1-2] -> n1, n2.
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte("#!/bin/sh\nprintf 'n1\\nn2\\n'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(node int, args ...string) string {
		t.Helper()
		cmd := exec.Command("/bin/sh", append([]string{filepath.Join(bin, "srun")}, args...)...)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "TMPDIR=" + tmp, "SLURM_NNODES=4", "SLURM_NODEID=" + strconv.Itoa(node), "SLURMD_NODENAME=n" + strconv.Itoa(node)}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("srun %v on node %d: %v", args, node, err)
		}
		return string(out)
	}
	for _, tc := range []struct {
		args []string
		runs string // on which of nodes 0..3
	}{
		{[]string{"echo", "x"}, "0123"},
		{[]string{"-N1", "echo", "x"}, "0"},
		{[]string{"--nodes=2", "echo", "x"}, "01"},
		{[]string{"-n", "1", "echo", "x"}, "0"},
		{[]string{"-N2", "-n1", "echo", "x"}, "0"},
		{[]string{"-N", "1", "-n", "1", "echo", "x"}, "0"},
		{[]string{"-w", "n[1-2]", "echo", "x"}, "12"},
	} {
		var got strings.Builder
		for n := range 4 {
			if run(n, tc.args...) == "x\n" {
				got.WriteString(strconv.Itoa(n))
			}
		}
		if got.String() != tc.runs {
			t.Errorf("srun %v ran on nodes %q, want %q", tc.args, got.String(), tc.runs)
		}
	}
}

// srun starts this node's share of the step's tasks, each numbered and
// with its own GPUs, and exits with the highest status of them.
func TestSrunShimStartsTasks(t *testing.T) {
	bin, err := writeJobBin(t.TempDir(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// run runs srun on node (of 2, 4 tasks of 2 GPUs each) and returns its
	// tasks' lines, sorted, and its exit status.
	run := func(node int, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command("/bin/sh", append([]string{filepath.Join(bin, "srun")}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + tmp, "SLURM_JOB_ID=7", "SLURM_NNODES=2", "SLURM_NODEID=" + strconv.Itoa(node),
			"SLURM_NTASKS_PER_NODE=4", "SLURM_GPUS_PER_TASK=2", "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"}
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		slices.Sort(lines)
		return strings.Join(lines, "|"), code
	}
	show := []string{"sh", "-c", "echo $SLURM_PROCID $SLURM_LOCALID $CUDA_VISIBLE_DEVICES $SLURM_NTASKS $RANK $LOCAL_RANK $WORLD_SIZE"}
	for _, tc := range []struct {
		args         []string
		node0, node1 string
	}{
		{nil, "0 0 0,1 8 0 0 8|1 1 2,3 8 1 1 8|2 2 4,5 8 2 2 8|3 3 6,7 8 3 3 8", "4 0 0,1 8 4 0 8|5 1 2,3 8 5 1 8|6 2 4,5 8 6 2 8|7 3 6,7 8 7 3 8"},
		{[]string{"--ntasks-per-node=1"}, "0 0 0,1 2 0 0 2", "1 0 0,1 2 1 0 2"},
		{[]string{"-n", "3"}, "0 0 0,1 3 0 0 3|1 1 2,3 3 1 1 3", "2 0 0,1 3 2 0 3"},                                        // -n alone: the job's nodes, spread
		{[]string{"-n", "3", "--ntasks-per-node=4"}, "0 0 0,1 3 0 0 3|1 1 2,3 3 1 1 3", "2 0 0,1 3 2 0 3"},                 // not 4 a node on 2: dropped (no word: 3 < 4)
		{[]string{"-n", "4", "--ntasks-per-node=4"}, "0 0 0,1 4 0 0 4|1 1 2,3 4 1 1 4", "2 0 0,1 4 2 0 4|3 1 2,3 4 3 1 4"}, // not 4 a node on 2: dropped
		{[]string{"-N", "2", "-n", "3"}, "0 0 0,1 3 0 0 3|1 1 2,3 3 1 1 3", "2 0 0,1 3 2 0 3"},                             // spread, the first node one more
		{[]string{"-N1", "--gpus-per-task=4", "-n2"}, "0 0 0,1,2,3 2 0 0 2|1 1 4,5,6,7 2 1 1 2", ""},
	} {
		for node, want := range []string{tc.node0, tc.node1} {
			got, code := run(node, append(slices.Clone(tc.args), show...)...)
			if got != want || code != 0 {
				t.Errorf("srun %v on node %d: %q (exit %d), want %q", tc.args, node, got, code, want)
			}
		}
	}
	// -o: each task's output to its own file (%t the task, %n the node);
	// -e apart, or merged.
	if out, code := run(1, "-o", tmp+"/out-%t-%n-%%.txt", "-e", tmp+"/err-%t.txt", "sh", "-c", "echo o$SLURM_PROCID; echo e$SLURM_PROCID >&2"); code != 0 || out != "" {
		t.Errorf("srun -o -e: exit %d, stdout %q; want 0 and nothing", code, out)
	}
	for l := range 4 {
		id := strconv.Itoa(4 + l)
		if b, err := os.ReadFile(tmp + "/out-" + id + "-1-%.txt"); err != nil || string(b) != "o"+id+"\n" {
			t.Errorf("task %s's -o file: %q, %v", id, b, err)
		}
		if b, err := os.ReadFile(tmp + "/err-" + id + ".txt"); err != nil || string(b) != "e"+id+"\n" {
			t.Errorf("task %s's -e file: %q, %v", id, b, err)
		}
	}
	if out, code := run(0, "sh", "-c", "exit $SLURM_LOCALID"); code != 3 {
		t.Errorf("tasks exiting 0 to 3: srun exit %d (%q), want the highest, 3", code, out)
	}
	// Steps are numbered on each node from 0, one per srun, whether the
	// node takes part or not: node 1 has seen 8 so far.
	for want := 8; want < 10; want++ {
		if got, _ := run(1, "--ntasks-per-node=1", "sh", "-c", "echo $SLURM_STEP_ID"); got != strconv.Itoa(want) {
			t.Errorf("step %q, want %d", got, want)
		}
	}
}

// A typed request's SLURM_GPUS_PER_TASK is TYPE:N, as Slurm writes it:
// srun takes N, and each task still gets its own GPUs.
func TestSrunShimTypedGPUsPerTask(t *testing.T) {
	bin, err := writeJobBin(t.TempDir(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", filepath.Join(bin, "srun"), "sh", "-c", "echo $SLURM_LOCALID $CUDA_VISIBLE_DEVICES $SLURM_GPUS_ON_NODE")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + t.TempDir(), "SLURM_JOB_ID=7", "SLURM_NNODES=1", "SLURM_NODEID=0",
		"SLURM_NTASKS_PER_NODE=2", "SLURM_GPUS_PER_TASK=a100:2", "CUDA_VISIBLE_DEVICES=0,1,2,3"}
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(lines)
	if got, want := strings.Join(lines, "|"), "0 0,1 4|1 2,3 4"; err != nil || got != want {
		t.Errorf("srun with SLURM_GPUS_PER_TASK=a100:2: %q (%v), want %q", got, err, want)
	}
}

// srun waits for its tasks to report how they ended, as Slurm's srun: it
// passes SIGTERM on to them (a script's kill of srun, timeout), outlives
// SIGUSR1 (scancel --signal sends it to the tasks themselves), and says
// how a task that failed ended.
func TestSrunShimPassesSignalsOn(t *testing.T) {
	bin, err := writeJobBin(t.TempDir(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		args   []string
		tasks  int
		signal syscall.Signal
		stdout string
		stderr string
		code   int
	}{
		{nil, 1, syscall.SIGTERM, "TERM\n", "srun: error: n1: task 0: Exited with exit code 7\n", 7},
		{[]string{"--ntasks-per-node=2", "-O"}, 2, syscall.SIGTERM, "TERM\nTERM\n", "srun: error: n1: tasks 0-1: Exited with exit code 7\n", 7},
		{nil, 1, syscall.SIGUSR1, "", "", 0}, // srun outlives it; the task, not signalled, ends alone
	} {
		ready := filepath.Join(t.TempDir(), "ready")
		task := `trap 'echo TERM; exit 7' TERM; touch "$READY.$SLURM_LOCALID"; i=0; while [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done`
		cmd := exec.Command("/bin/sh", append(append([]string{filepath.Join(bin, "srun")}, tc.args...), "sh", "-c", task)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + dir, "SLURM_NNODES=1", "SLURM_NODEID=0", "SLURMD_NODENAME=n1", "READY=" + ready}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Every task has set its trap.
		for l, i := 0, 0; l < tc.tasks && i < 500; i++ {
			if _, err := os.Stat(ready + "." + strconv.Itoa(l)); err == nil {
				l++
				continue
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd.Process.Signal(tc.signal)
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if out.String() != tc.stdout || errb.String() != tc.stderr || code != tc.code {
			t.Errorf("srun %q, then %v to srun: stdout %q stderr %q exit %d; want %q, %q, %d", tc.args, tc.signal, out.String(), errb.String(), code, tc.stdout, tc.stderr, tc.code)
		}
	}
}

// -K: the task that failed is reported with its own status, the others
// stopped with SIGTERM; srun exits with the highest.
func TestSrunShimKillOnBadExitReports(t *testing.T) {
	job := newFakeJob(t, []string{"gpu001"}, 3, "SLURM_CPUS_ON_NODE=3")
	// The other nodes' tasks are stopped by scancel JOBID.STEP: none here.
	bin := filepath.Dir(job.srun)
	if err := os.WriteFile(filepath.Join(bin, "scancel"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The agent stops the step's processes by their SLURM_STEP_ID, so srun
	// must not run its own helpers (the report's awk) with it: an awk
	// that notes when it is.
	realAwk, err := exec.LookPath("awk")
	if err != nil {
		t.Fatal(err)
	}
	inStep := filepath.Join(t.TempDir(), "awk-in-step")
	awk := "#!/bin/sh\n[ -z \"${SLURM_STEP_ID+x}\" ] || echo \"$1\" >>" + inStep + "\nexec " + realAwk + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "awk"), []byte(awk), 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := job.run(0, "-K", "sh", "-c", `[ "$SLURM_PROCID" = 0 ] && exit 4; sleep 5`)
	want := "srun: error: task 0 exited with status 4: stopping the step's tasks (--kill-on-bad-exit)\n" +
		"srun: error: gpu001: task 0: Exited with exit code 4\nsrun: error: gpu001: tasks 1-2: Terminated\n"
	if stdout != "" || stderr != want || code != 143 {
		t.Errorf("srun -K, task 0 exiting 4: stdout %q stderr %q exit %d; want %q, 143", stdout, stderr, code, want)
	}
	if b, err := os.ReadFile(inStep); err == nil {
		t.Errorf("srun ran awk as one of the step's processes (SLURM_STEP_ID set), which the step's scancel stops: %q", b)
	}
}
