package testcluster_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
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

// srun in a job of 3 nodes of 2 tasks, as Slurm's: grouped short flags,
// unknown options refused, --export, steps Slurm refuses (nodes outside
// the job, more tasks than it has) refused on every node, the step's own
// variables, and --mpi's note and list. The job's scontrol (the phx link)
// expands and compresses its host lists.
func TestSrunInsideAJobAsSlurms(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 3, LeafSize: 3, ClientBinary: buildPhx(t)})
	dir := t.TempDir()
	script := `#!/bin/sh
srun -lN1 -n1 echo grouped
srun -n1 --unknown-opt echo never; echo "unknown exit $?"
srun -n1 --export=ALL,BAR=bar sh -c 'echo "export-all FOO=$FOO BAR=$BAR"'
srun -n1 --export=NONE sh -c 'echo "export-none FOO=$FOO job=$SLURM_JOB_ID"'
srun -w gpu999 echo never; echo "outside exit $?"
srun -n 18 --ntasks-per-node=6 echo never 2>&1 | head -n1; srun -n 18 --ntasks-per-node=6 -O true; echo "overcommit exit $?"
second=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 2p)
srun -w "$second" -n1 sh -c 'echo "step $SLURMD_NODENAME nodes=$SLURM_NNODES/$SLURM_STEP_NUM_NODES id=$SLURM_NODEID tasks=$SLURM_NTASKS/$SLURM_STEP_NUM_TASKS per=$SLURM_TASKS_PER_NODE list=$SLURM_NODELIST/$SLURM_STEP_NODELIST job=$SLURM_JOB_NUM_NODES/$SLURM_JOB_NODELIST"'
srun -n5 sh -c 'echo "uneven $SLURM_PROCID $SLURM_TASKS_PER_NODE $SLURM_STEP_NODELIST"'
srun --mpi=pmix -N2 -n2 true
srun --mpi=list
`
	s := spec(dir, "srunslurm", 3, 8, script)
	s.TasksPerNode, s.Env = 2, map[string]string{"FOO": "job"}
	s.RequestForm = &phalanxv1.RequestForm{NtasksPerNode: true} // sbatch --ntasks-per-node=2
	id := submit(t, c, s)
	job := c.WaitJob(id, 60*time.Second, "COMPLETED", "FAILED")
	if job.State != "COMPLETED" {
		t.Fatalf("job ended %s (%s)", job.State, job.Reason)
	}
	jobID := strconv.FormatUint(id, 10)
	var names []string
	for _, a := range job.Alloc {
		names = append(names, a.Node)
	}
	sorted, list := hostlist.Sort(names), hostlist.Compress(names)
	second := sorted[1]
	want := map[string][]string{}
	for rank, node := range names {
		w := []string{
			"srun: unrecognized option '--unknown-opt'", `Try "srun --help" for more information`, "unknown exit 1",
			"srun: error: Unable to create step for job " + jobID + ": Requested node configuration is not available", "outside exit 1",
			"srun: error: Unable to create step for job " + jobID + ": More processors requested than permitted", "overcommit exit 0",
			"MPI plugin types are...", "\tnone",
		}
		if rank == 0 {
			// -n1 in a job of 3 nodes: srun says it takes one (three
			// times); -n5 with the job's --ntasks-per-node=2, that it drops
			// the latter.
			warn := "srun: Warning: can't run 1 processes on 3 nodes, setting nnodes to 1"
			w = append(w, "0: grouped", "export-all FOO=job BAR=bar", "export-none FOO= job="+jobID, warn, warn, warn,
				"srun: Warning: can't honor --ntasks-per-node set to 2 which doesn't match the requested tasks 5 with the number of requested nodes 3. Ignoring --ntasks-per-node.",
				"srun: warning: --mpi=pmix: Phalanx starts no PMI server, so MPI programs that use PMIx or PMI2 start as singletons: use torchrun or NCCL, or mpirun with its own launcher")
		}
		if node == second {
			w = append(w, "step "+second+" nodes=1/1 id=0 tasks=1/1 per=1 list="+list+"/"+second+" job=3/"+list)
		}
		for task := rank * 2; task < min(rank*2+2, 5); task++ {
			w = append(w, "uneven "+strconv.Itoa(task)+" 2(x2),1 "+list)
		}
		slices.Sort(w)
		want[fmt.Sprintf("srunslurm-%d-%d.out", id, rank)] = w
	}
	for name, w := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		slices.Sort(got)
		if !slices.Equal(got, w) {
			t.Errorf("%s:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
}
