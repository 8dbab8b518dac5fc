package nodeagent

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// shimWords are names the srun shim once kept its own state in: a job's
// script may export any of them (n, out, label) before it calls srun.
var shimWords = []string{
	"n", "m", "j", "c", "p", "s", "l", "t", "k", "r", "e", "a", "b", "v", "g", "ch", "id", "rc", "tl", "nc",
	"out", "err", "label", "nodes", "ntasks", "pernode", "cpt", "nodelist", "gpt", "killbad", "overcommit",
	"exports", "mpi", "shortopts", "longopts", "name", "kind", "same", "amb", "list", "given", "steps", "all",
	"me", "here", "jobper", "jobcpt", "spread", "stepnodes", "names", "jn", "first", "most", "last", "base",
	"extra", "tpn", "rs", "stepcpt", "jobcpus", "have", "steplist", "exportall", "keep", "envnames", "pids",
	"pid", "trapped", "stopped", "line", "N", "pn", "dist", "want", "ends", "i", "in", "sig", "f",
}

// srun is a program, as Slurm's: its tasks see the environment the job's
// script exported, changed only by the step's SLURM_* and launch
// variables (and --export's VAR=value), whatever names the script uses.
func TestSrunShimKeepsTheJobsVariables(t *testing.T) {
	env := []string{"CUDA_VISIBLE_DEVICES=0,1"}
	for _, w := range shimWords {
		env = append(env, w+"=user's "+w)
	}
	job := newFakeJob(t, stepTestNodes, 2, env...)
	// Each task prints one line, |n=$n|m=$m|...|.
	show := `echo "|`
	for _, w := range shimWords {
		show += w + "=$" + w + "|"
	}
	task := []string{"sh", "-c", show + `"`}
	// changed is the job's variables that not all of the n tasks' lines
	// in stdout show with the job's values.
	changed := func(stdout string, n int) []string {
		var diff []string
		for _, w := range shimWords {
			if strings.Count(stdout, "|"+w+"=user's "+w+"|") != n {
				diff = append(diff, w)
			}
		}
		return diff
	}
	cases := []struct {
		args  []string
		tasks []int // by rank
	}{
		{nil, []int{2, 2, 2}},
		{[]string{"-l", "-N1", "-n2"}, []int{2, 0, 0}},
		{[]string{"-K", "-n3", "--ntasks-per-node=1"}, []int{1, 1, 1}},
		{[]string{"--kill-on-bad-exit", "-N2", "-n4"}, []int{2, 2, 0}},
		{[]string{"-w", "gpu[001,003]", "-N2", "-n4", "--label"}, []int{0, 2, 2}},
		{[]string{"-N2", "-n3", "-c1", "--overcommit", "--ntasks-per-node=1"}, []int{2, 1, 0}},
		{[]string{"--gpus-per-task=1", "--mpi=none"}, []int{2, 2, 2}},
		{[]string{"--export=ALL,FOO=bar"}, []int{2, 2, 2}},
		{[]string{"--export=" + strings.Join(shimWords, ",")}, []int{2, 2, 2}},
	}
	for _, tc := range cases {
		for rank, n := range tc.tasks {
			stdout, stderr, code := job.run(rank, append(slices.Clone(tc.args), task...)...)
			if lines := strings.Count(stdout, "\n"); lines != n || stderr != "" || code != 0 {
				t.Errorf("srun %q on node %d: %d line(s), stderr %q, exit %d; want %d task(s)", tc.args, rank, lines, stderr, code, n)
			}
			if diff := changed(stdout, n); len(diff) > 0 {
				t.Errorf("srun %q on node %d: the tasks see other values of %s than the job's", tc.args, rank, strings.Join(diff, ", "))
			}
		}
	}
	// -o and -e: each task's own files, named after its number, node and
	// step (every node has seen one step a case so far), written once
	// under each shell.
	dir := t.TempDir()
	stdout, stderr, code := job.run(2, append([]string{"-o", dir + "/%t-%n-%s.out", "-e", dir + "/%t.err"}, task...)...)
	if stdout != "" || stderr != "" || code != 0 {
		t.Fatalf("srun -o -e: stdout %q stderr %q exit %d; want nothing", stdout, stderr, code)
	}
	for _, id := range []string{"4", "5"} {
		b, err := os.ReadFile(filepath.Join(dir, id+"-2-"+strconv.Itoa(len(cases))+".out"))
		if err != nil {
			t.Fatalf("srun -o -e: %v", err)
		}
		if diff := changed(string(b), len(shells())); len(diff) > 0 {
			t.Errorf("srun -o -e: task %s sees other values of %s than the job's", id, strings.Join(diff, ", "))
		}
	}
}
