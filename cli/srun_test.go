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
		s.Error != strings.TrimSuffix(s.Output, ".out")+".err" {
		t.Errorf("spec %+v", s)
	}
	if want := "exec srun -l '--mpi=pmix' -- 'python' 'train.py' '--lr' '0.1'"; !strings.Contains(s.Script, want) {
		t.Errorf("script %q, want it to run %q", s.Script, want)
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
