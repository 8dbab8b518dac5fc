package cli

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/sbatch"
)

func TestParseSrun(t *testing.T) {
	env := sbatch.Env{User: "alice", UID: 1000, GID: 100, Cwd: "/home/alice", Environ: []string{"PATH=/usr/bin"}}
	r, err := parseSrun([]string{"-N", "2", "--gpus-per-node=8", "--ntasks-per-node", "8", "-l", "--mpi=pmix", "python", "train.py", "--lr", "0.1"}, env)
	if err != nil {
		t.Fatal(err)
	}
	s := r.req.Spec
	if s.Nodes != 2 || s.GpusPerNode != 8 || s.TasksPerNode != 8 || s.Name != "python" ||
		!strings.HasPrefix(s.Output, "/tmp/phx-srun-%u-%j-") || !strings.HasSuffix(s.Output, "-%n.out") ||
		s.Error != strings.TrimSuffix(s.Output, ".out")+".err" {
		t.Errorf("spec %+v", s)
	}
	if want := "exec srun -l '--mpi=pmix' -- 'python' 'train.py' '--lr' '0.1'"; !strings.Contains(s.Script, want) {
		t.Errorf("script %q, want it to run %q", s.Script, want)
	}
	// sacct's SubmitLine is the srun command line given, as Slurm's.
	if want := "srun -N 2 --gpus-per-node=8 --ntasks-per-node 8 -l --mpi=pmix python train.py --lr 0.1"; s.SubmitLine != want {
		t.Errorf("submit line %q, want %q", s.SubmitLine, want)
	}
	// -o and -e name each task's files, as srun in a job takes them.
	r, err = parseSrun([]string{"-o", "out %t.txt", "-J", "x", "sh", "-c", "echo 'it''s'"}, env)
	if err != nil {
		t.Fatal(err)
	}
	want := `exec srun '--output=out %t.txt' -- 'sh' '-c' 'echo '\''it'\'''\''s'\'''`
	if !strings.HasPrefix(r.req.Spec.Output, "/tmp/phx-srun-") || r.req.Spec.Name != "x" || !strings.Contains(r.req.Spec.Script, want) {
		t.Errorf("-o 'out %%t.txt': spec %+v, want a script with %s", r.req.Spec, want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pty", "bash"}, "--pty: Phalanx has no interactive steps"},
		{[]string{"-N", "2"}, "no command to run"},
		{[]string{"--array=1-3", "true"}, "unrecognized option '--array'"},
		{[]string{"-N", "0", "true"}, "--nodes=0"},
	} {
		if _, err := parseSrun(tc.args, env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("srun %q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestParseSrunStep(t *testing.T) {
	st, ok, err := parseSrunStep([]string{"--jobid=42", "--overlap", "-w", "gpu[1-2]", "-N1", "-l", "nvidia-smi", "-L"})
	if err != nil || !ok {
		t.Fatalf("parse: ok %v, %v", ok, err)
	}
	if st.job != 42 || !slices.Equal(st.nodes, []string{"gpu1", "gpu2"}) || st.count != 1 || !st.label || !slices.Equal(st.cmd, []string{"nvidia-smi", "-L"}) {
		t.Errorf("parsed %+v", st)
	}
	if _, ok, err := parseSrunStep([]string{"-N2", "hostname"}); ok || err != nil {
		t.Errorf("without --jobid: ok %v, %v; want the allocating srun", ok, err)
	}
	if _, ok, _ := parseSrunStep([]string{"--jobid", "4", "--help"}); ok {
		t.Error("--jobid --help: want the usage")
	}
	for args, want := range map[string]string{
		"--jobid=x id":             "--jobid=x: not a job ID",
		"--jobid=0 id":             "--jobid=0: not a job ID",
		"--jobid=4":                "no command to run",
		"--jobid=4 -n2 id":         "--ntasks does not apply with --jobid",
		"--jobid=4 -p gpu id":      "--partition does not apply with --jobid",
		"--jobid=4 -N0 id":         "--nodes=0: with --jobid",
		"--jobid=4 -w gpu[2-1] id": "--nodelist=gpu[2-1]",
	} {
		_, ok, err := parseSrunStep(strings.Fields(args))
		if !ok || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("srun %s: ok %v, %v; want an error saying %q", args, ok, err, want)
		}
	}
}

// srun's warnings about output it could not read: one line each, and none
// for a node whose task never started (its launch failed: the job's end
// says why), so that such a job's failure is one line, not a warning of
// two lines about files that were never written.
func TestSrunReadErrors(t *testing.T) {
	gone := errors.New("job 85's output on gpu001: open /tmp/phx-srun-root-85-c288d65c-0.out: no such file or directory")
	gone2 := errors.New("job 85's output on gpu001: open /tmp/phx-srun-root-85-c288d65c-0.err: no such file or directory")
	lost := errors.New("node gpu002's agent went away while its output was read: run phx logs again")
	errs := map[int32][]error{0: {gone, gone2}, 1: {lost}}
	started := timestamppb.New(testNow)
	for _, tc := range []struct {
		name string
		job  *phalanxv1.Job
		want []string
	}{
		{"launch failed on node 0", &phalanxv1.Job{Tasks: []*phalanxv1.Task{{Rank: 0, State: "FAILED"}, {Rank: 1, State: "KILLED", StartTime: started}}},
			[]string{"srun: warning: " + lost.Error()}},
		{"both started", &phalanxv1.Job{Tasks: []*phalanxv1.Task{{Rank: 0, StartTime: started}, {Rank: 1, StartTime: started}}},
			[]string{"srun: warning: " + gone.Error(), "srun: warning: " + gone2.Error(), "srun: warning: " + lost.Error()}},
		{"job unknown", nil,
			[]string{"srun: warning: " + gone.Error(), "srun: warning: " + gone2.Error(), "srun: warning: " + lost.Error()}},
	} {
		if got := srunReadErrors(tc.job, errs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// srun outside a job checks --mpi before it submits anything, as Slurm's
// does: a bad type was found by the srun inside the job, which had been
// submitted and then FAILED; --mpi=list is answered here.
func TestSrunChecksMPIBeforeSubmitting(t *testing.T) {
	f, addr := startFake(t)
	for _, tc := range []struct {
		args []string
		typ  string
	}{
		{[]string{"--mpi=bogus", "true"}, "bogus"},
		{[]string{"--jobid=42", "--mpi", "pmi3", "true"}, "pmi3"}, // a step of a running job too
	} {
		code, stdout, stderr := runOut(t, addr, append([]string{"srun"}, tc.args...)...)
		if want := "srun: error: Invalid MPI type '" + tc.typ + "', --mpi=list for acceptable types\n"; code != 1 || stdout != "" || stderr != want {
			t.Errorf("srun %q: code %d, stdout %q, stderr %q; want 1, %q", tc.args, code, stdout, stderr, want)
		}
	}
	code, stdout, stderr := runOut(t, addr, "srun", "--mpi=list", "true")
	if code != 0 || stdout != "MPI plugin types are...\n\tnone\n" || stderr != "" {
		t.Errorf("srun --mpi=list: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.submits) != 0 {
		t.Errorf("%d jobs submitted; want none", len(f.submits))
	}
}
