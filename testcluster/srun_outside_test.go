package testcluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/testcluster"
)

// srun outside a job, as a user types it on a login node: the nodes are
// allocated, the tasks run there as the user, their output and errors
// come back here as they are written, and srun exits as the tasks did.
func TestSrunOutsideAJob(t *testing.T) {
	user := localUser(t, "phxsrun")
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2, Runtime: "process"})
	dir := userDir(t, user)
	code, out, errOut := phxAs(t, c, user, dir, nil, "srun", "-N", "2", "--gpus-per-node=8", "--ntasks-per-node=2", "-l",
		"sh", "-c", `echo "task $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME as $(id -un)"; echo "note $SLURM_PROCID" >&2`)
	if code != 0 {
		t.Fatalf("srun: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// -l labels each line with its task, stderr merged, as the srun in a
	// job does; tasks 0 and 1 on one node, 2 and 3 on the other.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	slices.Sort(lines)
	if len(lines) != 8 {
		t.Fatalf("stdout %q: want 8 lines", lines)
	}
	nodes := map[string]string{}
	for i := range 4 {
		note, task := lines[2*i], strings.Fields(lines[2*i+1])
		if want := fmt.Sprintf("%d: note %d", i, i); note != want {
			t.Errorf("line %q, want %q", note, want)
		}
		if len(task) != 9 || task[0] != fmt.Sprintf("%d:", i) || task[2] != fmt.Sprint(i) || task[4] != "4" || task[8] != "phxsrun" {
			t.Errorf("line %q: want task %d of 4 as phxsrun", lines[2*i+1], i)
			continue
		}
		nodes[fmt.Sprint(i)] = task[6]
	}
	if nodes["0"] != nodes["1"] || nodes["2"] != nodes["3"] || nodes["0"] == nodes["2"] {
		t.Errorf("tasks' nodes %v: want 0 and 1 on one, 2 and 3 on the other", nodes)
	}

	// Without -l, errors come on srun's standard error.
	code, out, errOut = phxAs(t, c, user, dir, nil, "srun", "-N2", "--gpus-per-node=8", "sh", "-c", "echo out; echo err >&2")
	if code != 0 || out != "out\nout\n" || strings.Count(errOut, "err\n") != 2 {
		t.Errorf("srun -N2: exit %d, stdout %q, stderr %q; want out twice, err twice on stderr", code, out, errOut)
	}

	code, out, errOut = phxAs(t, c, user, dir, nil, "srun", "sh", "-c", "echo before; exit 3")
	if code != 3 || out != "before\n" || !strings.Contains(errOut, "srun: error: job") {
		t.Errorf("a task exiting 3: exit %d, stdout %q, stderr %q; want 3, before, and why", code, out, errOut)
	}
	code, _, errOut = phxAs(t, c, user, dir, nil, "srun", "--pty", "bash")
	if code == 0 || !strings.Contains(errOut, "--pty") {
		t.Errorf("srun --pty: exit %d, %q", code, errOut)
	}
}
