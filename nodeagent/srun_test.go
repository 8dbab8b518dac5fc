package nodeagent

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestSrunShimRunsItsCommandHere(t *testing.T) {
	bin, err := writeJobBin(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	srun := filepath.Join(bin, "srun")
	if fi, err := os.Stat(srun); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("srun: %v %v", fi, err)
	}
	for _, tc := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"echo", "hi"}, "hi\n", "", 0},
		{[]string{"-N", "2", "--ntasks-per-node=1", "--mpi=pmix", "-l", "echo", "a", "-n", "b"}, "0: a -n b\n", "", 0},
		{[]string{"-N2", "--gpus-per-node", "8", "--", "echo", "x"}, "x\n", "", 0},
		{[]string{"--ntasks-per-node=8", "echo", "y"}, "y\n", "srun: warning: Phalanx runs one task per node; --ntasks-per-node=8 is ignored", 0},
		{[]string{"-n", "4", "echo", "z"}, "z\n", "srun: warning: Phalanx runs one task per node; -n 4 over 1 nodes runs one per node", 0},
		{[]string{"-K", "echo", "k"}, "k\n", "", 0}, // -K takes no word: echo is the command
		{[]string{"-K1", "--kill-on-bad-exit=1", "echo", "k1"}, "k1\n", "", 0},
		{[]string{"-l", "sh", "-c", "echo a; echo b >&2; printf c; exit 4"}, "0: a\n0: b\n0: c\n", "", 4},
		{[]string{"--container-image=nvcr.io/nvidia/pytorch:24.05", "python", "x.py"}, "", "srun: error: --container-image is not supported inside a Phalanx job", 1},
		{[]string{"-N"}, "", "srun: error: -N needs a value", 1},
		{[]string{"-N", "0", "echo"}, "", "srun: error: -N=0: give a positive count", 1},
		{[]string{"sh", "-c", "exit 3"}, "", "", 3},
		{[]string{"-N", "2"}, "", "srun: error: no command to run", 1},
	} {
		cmd := exec.Command("/bin/sh", append([]string{srun}, tc.args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "SLURM_NNODES=1", "SLURM_NODEID=0"}
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
	bin, err := writeJobBin(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	// A stand-in for the phx link: scontrol show hostnames n[1-2] -> n1, n2.
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte("#!/bin/sh\nprintf 'n1\\nn2\\n'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(node int, args ...string) string {
		t.Helper()
		cmd := exec.Command("/bin/sh", append([]string{filepath.Join(bin, "srun")}, args...)...)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "SLURM_NNODES=4", "SLURM_NODEID=" + strconv.Itoa(node), "SLURMD_NODENAME=n" + strconv.Itoa(node)}
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
