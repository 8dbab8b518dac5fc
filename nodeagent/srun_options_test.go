package nodeagent

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// fakeJob is a job as the agent starts its batch script on each of its
// nodes, for running the srun shim there: each node with its own step
// directory (the agent's nodes file in it) and Slurm variables.
type fakeJob struct {
	t     *testing.T
	srun  string
	nodes []string   // by rank
	steps [][]string // by shell, each node's PHX_STEP_DIR
	env   []string   // every node's, after the job's own
}

// newFakeJob is a job on nodes (by rank) of perNode tasks each, as sbatch
// -N gives it (one task a node) or -N with --ntasks-per-node (more); env
// are more of its variables (they override the job's).
func newFakeJob(t *testing.T, nodes []string, perNode int, env ...string) *fakeJob {
	t.Helper()
	dir := t.TempDir()
	bin, err := writeJobBin(dir, "", false)
	if err != nil {
		t.Fatal(err)
	}
	// No scontrol, as in a container: srun expands host lists itself.
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte("#!/bin/sh\nexit 127\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	j := &fakeJob{t: t, srun: filepath.Join(bin, "srun"), nodes: nodes}
	info := jobInfo{id: 7}
	for _, n := range nodes {
		info.ranks = append(info.ranks, rankSlot{node: n})
	}
	// Each shell on its own, numbering steps from 0.
	for sh := range shells() {
		var steps []string
		for rank := range nodes {
			jobDir := filepath.Join(dir, strconv.Itoa(sh), strconv.Itoa(rank))
			if err := os.MkdirAll(jobDir, 0o755); err != nil {
				t.Fatal(err)
			}
			d, err := stepDir(jobDir, info)
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, d)
		}
		j.steps = append(j.steps, steps)
	}
	list, tasks := hostlist.Compress(nodes), strconv.Itoa(len(nodes)*perNode)
	j.env = []string{"PATH=" + bin + ":/usr/bin:/bin", "SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=" + list, "SLURM_NODELIST=" + list,
		"SLURM_NNODES=" + strconv.Itoa(len(nodes)), "SLURM_JOB_NUM_NODES=" + strconv.Itoa(len(nodes)),
		"SLURM_TASKS_PER_NODE=" + tasksPerNode(perNode, len(nodes))}
	if perNode > 1 { // as sbatch --ntasks-per-node sets them; -N alone does not
		j.env = append(j.env, "SLURM_NTASKS="+tasks, "SLURM_NPROCS="+tasks, "SLURM_NTASKS_PER_NODE="+strconv.Itoa(perNode))
	}
	j.env = append(j.env, env...)
	return j
}

// shells are the shells srun.sh must run in: /bin/sh, and busybox's
// where it is installed (as in many images).
func shells() [][]string {
	out := [][]string{{"/bin/sh"}}
	if bb, err := exec.LookPath("busybox"); err == nil {
		out = append(out, []string{bb, "sh"})
	}
	return out
}

// run runs srun args on the node of rank under each shell, and returns
// what it printed and its exit status, the same under every shell.
func (j *fakeJob) run(rank int, args ...string) (stdout, stderr string, code int) {
	j.t.Helper()
	for i, sh := range shells() {
		cmd := exec.Command(sh[0], append(append(sh[1:], j.srun), args...)...)
		cmd.Env = append([]string{"PHX_STEP_DIR=" + j.steps[i][rank], "SLURM_NODEID=" + strconv.Itoa(rank),
			"SLURMD_NODENAME=" + j.nodes[rank], "SLURM_PROCID=" + strconv.Itoa(rank)}, j.env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		c := 0
		if ee, ok := err.(*exec.ExitError); ok {
			c = ee.ExitCode()
		} else if err != nil {
			j.t.Fatalf("srun %q: %v", args, err)
		}
		// As if in the first shell's step directory.
		o := strings.ReplaceAll(out.String(), j.steps[i][rank], j.steps[0][rank])
		e := strings.ReplaceAll(errb.String(), j.steps[i][rank], j.steps[0][rank])
		if i > 0 && (sortLines(o) != sortLines(stdout) || e != stderr || c != code) {
			j.t.Errorf("srun %q under %s: stdout %q stderr %q exit %d; under /bin/sh %q, %q, %d", args, sh, o, e, c, stdout, stderr, code)
		}
		if i == 0 {
			stdout, stderr, code = o, e, c
		}
	}
	return stdout, stderr, code
}

// sortLines is s's lines sorted (tasks print in any order).
func sortLines(s string) string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

const tryHelp = "Try \"srun --help\" for more information\n"

// srun reads its command line as Slurm 22.05's srun (getopt_long): short
// flags grouped with the last taking a value, long options by unambiguous
// prefix, every option of srun's taking the value it takes, and the rest
// refused with getopt's own words.
func TestSrunShimParsesOptionsAsSlurm(t *testing.T) {
	job := newFakeJob(t, []string{"gpu001"}, 2)
	for _, tc := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"-lN1", "-n1", "echo", "x"}, "0: x\n", "", 0},
		{[]string{"-ln1", "echo", "x"}, "0: x\n", "", 0},
		{[]string{"-lK", "echo", "x"}, "0: x\n1: x\n", "", 0},
		{[]string{"-Kl", "echo", "x"}, "", "srun: error: Invalid numeric value \"l\" for --kill-on-bad-exit.\n", 1},
		{[]string{"-K0", "-n1", "echo", "x"}, "x\n", "", 0},
		{[]string{"--tasks-per-node", "1", "-n1", "echo", "x"}, "x\n", "", 0},
		{[]string{"--tasks-per-node=1", "-n1", "echo", "x"}, "x\n", "", 0},
		{[]string{"--ntasks-per-n=1", "-n1", "echo", "x"}, "x\n", "", 0},
		{[]string{"--ntasks-per-gpu", "1", "--mem-bind", "local", "-n1", "echo", "x"}, "x\n", "", 0},
		{[]string{"-s", "-n1", "echo", "x"}, "x\n", "", 0},                      // --oversubscribe: a flag
		{[]string{"--bcast", "-n1", "echo", "x"}, "x\n", "", 0},                 // an optional value is attached only
		{[]string{"--kill=0", "--overlap=x", "-n1", "echo", "x"}, "x\n", "", 0}, // prefix; optional values
		{[]string{"-n1", "--unknown-opt", "echo", "x"}, "", "srun: unrecognized option '--unknown-opt'\n" + tryHelp, 1},
		{[]string{"--unknown-opt=3", "echo", "x"}, "", "srun: unrecognized option '--unknown-opt=3'\n" + tryHelp, 1},
		{[]string{"--ntasks-per=1", "echo", "x"}, "", "srun: option '--ntasks-per=1' is ambiguous; possibilities: '--ntasks-per-core' '--ntasks-per-gpu' '--ntasks-per-node' '--ntasks-per-socket' '--ntasks-per-tres'\n" + tryHelp, 1},
		// cpu_bind is cpu-bind under another name: not one of cpu's possibilities.
		{[]string{"--cpu", "x", "echo"}, "", "srun: option '--cpu' is ambiguous; possibilities: '--cpu-bind' '--cpu-freq' '--cpus-per-gpu' '--cpus-per-task'\n" + tryHelp, 1},
		{[]string{"--label=1", "echo", "x"}, "", "srun: option '--label' doesn't allow an argument\n" + tryHelp, 1},
		{[]string{"--lab=1", "echo", "x"}, "", "srun: option '--label' doesn't allow an argument\n" + tryHelp, 1},
		{[]string{"--nodes"}, "", "srun: option '--nodes' requires an argument\n" + tryHelp, 1},
		{[]string{"-N"}, "", "srun: option requires an argument -- 'N'\n" + tryHelp, 1},
		{[]string{"-lY", "echo", "x"}, "", "srun: invalid option -- 'Y'\n" + tryHelp, 1},
		{[]string{"-n1", "--", "echo", "-l"}, "-l\n", "", 0},
		{[]string{"-h"}, "Usage: srun", "", 0},
		{[]string{"--usage", "echo", "x"}, "Usage: srun", "", 0},
		// Slurm's line alone, which scripts parse ("slurm 22.05 (...)" was
		// not a version that wants three numbers, or nothing after them).
		{[]string{"--version"}, "slurm 22.05.8\n", "srun: Phalanx's srun inside a job\n", 0},
		{[]string{"-V", "echo", "x"}, "slurm 22.05.8\n", "srun: Phalanx's srun inside a job\n", 0},
	} {
		stdout, stderr, code := job.run(0, tc.args...)
		if (sortLines(stdout) != sortLines(tc.stdout) && !(strings.HasPrefix(tc.stdout, "Usage") && strings.HasPrefix(stdout, tc.stdout))) ||
			stderr != tc.stderr || code != tc.code {
			t.Errorf("srun %q: stdout %q stderr %q exit %d; want %q, %q, %d", tc.args, stdout, stderr, code, tc.stdout, tc.stderr, tc.code)
		}
	}
}

// The shim's option table is Slurm 22.05's: srun 22.05 itself, where it is
// installed (Debian's slurm-client), answers each of the table's long
// options, each letter's prefix (--a lists every option beginning with a,
// in getopt_long's order) and each short option as the shim does.
func TestSrunShimOptionsMatchSlurm(t *testing.T) {
	// A configuration for srun to read; it answers before it needs slurmctld.
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=x\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "SLURM_CONF=" + conf}
	cmd := exec.Command("srun", "--version")
	cmd.Env = env
	version, err := cmd.Output()
	if err != nil || !regexp.MustCompile(`^slurm(-wlm)? 22\.05\.`).Match(version) {
		if os.Getenv("CI") == "true" { // .ci/run installs Debian 12's slurm-client: the check must run there
			t.Fatalf("CI: no Slurm 22.05 srun to check the option table against: %q, %v", version, err)
		}
		t.Skipf("needs Slurm 22.05's srun on PATH (Debian 12's slurm-client) to check the option table against: %q, %v", version, err)
	}
	job := newFakeJob(t, []string{"gpu001"}, 1)
	var cases [][]string
	table := srunShim[strings.Index(srunShim, "longopts='")+10:]
	for _, e := range strings.Fields(table[:strings.Index(table, "'")]) {
		name := e[:strings.IndexAny(e+":", ":=")]
		cases = append(cases, []string{"--" + name}, []string{"--" + name + "=1"})
	}
	for c := 'a'; c <= 'z'; c++ {
		cases = append(cases, []string{"--" + string(c)}, []string{"-" + string(c)}, []string{"-" + string(c) + "@"},
			[]string{"-" + strings.ToUpper(string(c))}, []string{"-" + strings.ToUpper(string(c)) + "@"})
	}
	// getoptSays is the getopt_long message in an answer, or "accepted".
	getopt := regexp.MustCompile(`(?m)^srun: (unrecognized option|option|invalid option) .*$`)
	getoptSays := func(out []byte) string {
		if m := getopt.Find(out); m != nil {
			return string(m)
		}
		return "accepted"
	}
	for _, args := range cases {
		// Options it takes are answered at once; --test-only would then
		// try slurmctld for 18 s.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		cmd := exec.CommandContext(ctx, "srun", args...)
		cmd.Env = env
		slurm, _ := cmd.CombinedOutput()
		cancel()
		stdout, stderr, _ := job.run(0, args...)
		if want, got := getoptSays(slurm), getoptSays([]byte(stdout+stderr)); got != want {
			t.Errorf("srun %q: the shim says %q, Slurm 22.05's srun %q", args, got, want)
		}
	}
}
