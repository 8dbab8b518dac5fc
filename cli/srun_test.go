package cli

import (
	"strings"
	"testing"

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
		s.Error != strings.TrimSuffix(s.Output, ".out")+".err" || !r.stdout || !r.stderr {
		t.Errorf("spec %+v", s)
	}
	if want := "exec srun -l --mpi=pmix -- 'python' 'train.py' '--lr' '0.1'"; !strings.Contains(s.Script, want) {
		t.Errorf("script %q, want it to run %q", s.Script, want)
	}
	r, err = parseSrun([]string{"-o", "out.txt", "-J", "x", "sh", "-c", "echo 'it''s'"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if r.stdout || !r.stderr || r.req.Spec.Output != "out.txt" || r.req.Spec.Name != "x" || !strings.Contains(r.req.Spec.Script, `'echo '\''it'\'''\''s'\'''`) {
		t.Errorf("-o out.txt: stdout %v stderr %v spec %+v", r.stdout, r.stderr, r.req.Spec)
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
