package testcluster_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/testcluster"
)

// A Slurm-style script that launches its work with srun runs it once per
// node, with each node's rank.
func TestSrunInsideABatchScript(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2})
	dir := t.TempDir()
	script := "#!/bin/bash\n#SBATCH -N 2\nsrun --ntasks-per-node=1 sh -c 'echo rank=$RANK of $WORLD_SIZE'\n"
	id := submit(t, c, spec(dir, "srun", 2, 8, script))
	job := c.WaitJob(id, 20*time.Second, "COMPLETED", "FAILED")
	if job.State != "COMPLETED" {
		t.Fatalf("job ended %s (%s)", job.State, job.Reason)
	}
	for rank := 0; rank < 2; rank++ {
		out, err := os.ReadFile(filepath.Join(dir, "srun-"+strconv.FormatUint(id, 10)+"-"+strconv.Itoa(rank)+".out"))
		if want := "rank=" + strconv.Itoa(rank) + " of 2"; err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("rank %d output %q, %v; want %q", rank, out, err, want)
		}
	}
}
