package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The job the tests below run srun in: 3 nodes of 2 tasks, ranked
// gpu002, gpu001, gpu003 (the agent's nodes file keeps that order;
// SLURM_JOB_NODELIST is sorted).
var stepTestNodes = []string{"gpu002", "gpu001", "gpu003"}

// onEveryNode runs srun args on each node of job and returns, by rank,
// its sorted output, errors and exit status as "stdout|stderr|code".
func onEveryNode(job *fakeJob, args ...string) []string {
	var got []string
	for rank := range job.nodes {
		stdout, stderr, code := job.run(rank, args...)
		got = append(got, sortLines(stdout)+"|"+stderr+"|"+strconv.Itoa(code))
	}
	return got
}

// As Slurm's controller, srun refuses a step on nodes outside the job, or
// that needs more CPUs on a node than the job has there (unless -O); each
// node refuses it alike, so that every node's script sees it fail.
func TestSrunShimRefusesStepsSlurmRefuses(t *testing.T) {
	job := newFakeJob(t, stepTestNodes, 2)
	outside := "|srun: error: Unable to create step for job 7: Requested node configuration is not available\n|1"
	cpus := "srun: error: Unable to create step for job 7: More processors requested than permitted\n"
	honor16 := "srun: Warning: can't honor --ntasks-per-node set to 2 which doesn't match the requested tasks 16 with the number of requested nodes 3. Ignoring --ntasks-per-node.\n"
	for _, tc := range []struct {
		args []string
		want []string // by rank; a prefix of the errors
	}{
		{[]string{"-w", "gpu009", "echo", "x"}, []string{outside, outside, outside}},
		{[]string{"-w", "gpu[001-002],gpu009", "echo", "x"}, []string{outside, outside, outside}},
		{[]string{"-w", "gpu[001-002]", "-N2", "-n4", "echo", "x"}, []string{"x\nx||0", "x\nx||0", "||0"}},
		// As Slurm's srun, which takes the job's SLURM_NNODES as -N: the
		// job's other node makes -w's up to 3.
		{[]string{"-w", "gpu[001-002]", "echo", "x"}, []string{"x\nx||0", "x\nx||0", "x\nx||0"}},
		{[]string{"-w", "gpu003", "-n1", "echo", "x"}, []string{"|srun: Warning: can't run 1 processes on 3 nodes, setting nnodes to 1\n|0", "||0", "x||0"}},
		{[]string{"-n", "16", "echo", "x"}, []string{"|" + honor16 + cpus, "|" + cpus, "|" + cpus}},
		{[]string{"-n9", "--ntasks-per-node=3", "echo", "x"}, []string{"|" + cpus, "|" + cpus, "|" + cpus}},
		{[]string{"-N1", "-n3", "--ntasks-per-node=3", "echo", "x"}, []string{"|" + cpus, "||0", "||0"}[:1]},
		{[]string{"-c2", "echo", "x"}, []string{"|" + cpus, "|" + cpus, "|" + cpus}},
		{[]string{"-n", "16", "-O", "echo", "x"}, []string{strings.Repeat("x\n", 5) + "x|" + honor16 + "|0", strings.Repeat("x\n", 4) + "x||0", strings.Repeat("x\n", 4) + "x||0"}},
		{[]string{"-n", "6", "echo", "x"}, []string{"x\nx||0", "x\nx||0", "x\nx||0"}},
	} {
		got := onEveryNode(job, tc.args...)
		for rank, want := range tc.want {
			if !strings.HasPrefix(got[rank], want) || (strings.HasSuffix(want, "|0") && got[rank] != want) {
				t.Errorf("srun %q on node %d: %q, want %q", tc.args, rank, got[rank], want)
			}
		}
	}
	// The job's CPUs count: 2 tasks of 2 CPUs hold 4 tasks of 1. As in
	// Slurm 22.05, srun's tasks take 1 CPU unless -c or SRUN_CPUS_PER_TASK
	// says otherwise: it does not read the job's SLURM_CPUS_PER_TASK.
	job = newFakeJob(t, stepTestNodes, 2, "SLURM_CPUS_PER_TASK=2")
	for _, args := range [][]string{{"-c1", "-n12"}, {"-n12"}} {
		if got := onEveryNode(job, append(args, "echo", "x")...); got[2] != "x\nx\nx\nx||0" {
			t.Errorf("srun %q in a job of 2 tasks of 2 CPUs on each node: %q, want 4 tasks on each", args, got)
		}
	}
	job = newFakeJob(t, stepTestNodes, 2, "SLURM_CPUS_PER_TASK=2", "SRUN_CPUS_PER_TASK=2")
	if got := onEveryNode(job, "-n12", "--ntasks-per-node=4", "echo", "x"); !strings.HasPrefix(got[0], "|"+cpus) {
		t.Errorf("srun -n12 with SRUN_CPUS_PER_TASK=2 in a job of 2 tasks of 2 CPUs on each node: %q, want it refused", got)
	}
	// An exclusive job holds every CPU of its nodes (SLURM_CPUS_ON_NODE):
	// one task per node in the batch script, eight in its step.
	job = newFakeJob(t, stepTestNodes, 1, "SLURM_CPUS_ON_NODE=64")
	if got := onEveryNode(job, "--ntasks-per-node=8", "echo", "x"); got[0] != strings.Repeat("x\n", 7)+"x||0" {
		t.Errorf("srun --ntasks-per-node=8 in an exclusive job of 64 CPUs a node: %q, want 8 tasks on each", got)
	}
}

// Each task sees the step, as Slurm's srun sets it: SLURM_STEP_* and, over
// the job's, SLURM_NNODES, SLURM_NODEID (its node's place in the step),
// SLURM_NTASKS and SLURM_TASKS_PER_NODE; SLURM_NODELIST and SLURM_JOB_*
// stay the job's (checked live: Slurm 22.05's tasks of srun -N1 in a job
// of two nodes see both in SLURM_NODELIST). The step's nodes are numbered
// in the job's order (by rank).
func TestSrunShimSetsStepVariables(t *testing.T) {
	job := newFakeJob(t, stepTestNodes, 2)
	show := []string{"sh", "-c", `echo $SLURMD_NODENAME $SLURM_PROCID nodes=$SLURM_NNODES/$SLURM_STEP_NUM_NODES id=$SLURM_NODEID ` +
		`tasks=$SLURM_NTASKS/$SLURM_STEP_NUM_TASKS/$SLURM_NPROCS per=$SLURM_TASKS_PER_NODE/$SLURM_STEP_TASKS_PER_NODE ` +
		`list=$SLURM_NODELIST/$SLURM_STEP_NODELIST job=$SLURM_JOB_NUM_NODES/$SLURM_JOB_NODELIST`}
	for _, tc := range []struct {
		args []string
		want []string // by rank
	}{
		{[]string{"-w", "gpu001", "-N1", "-n1"}, []string{"", "gpu001 0 nodes=1/1 id=0 tasks=1/1/1 per=1/1 list=gpu[001-003]/gpu001 job=3/gpu[001-003]", ""}},
		{nil, []string{
			"gpu002 0 nodes=3/3 id=0 tasks=6/6/6 per=2(x3)/2(x3) list=gpu[001-003]/gpu[001-003] job=3/gpu[001-003]\n" +
				"gpu002 1 nodes=3/3 id=0 tasks=6/6/6 per=2(x3)/2(x3) list=gpu[001-003]/gpu[001-003] job=3/gpu[001-003]",
			"gpu001 2 nodes=3/3 id=1 tasks=6/6/6 per=2(x3)/2(x3) list=gpu[001-003]/gpu[001-003] job=3/gpu[001-003]\n" +
				"gpu001 3 nodes=3/3 id=1 tasks=6/6/6 per=2(x3)/2(x3) list=gpu[001-003]/gpu[001-003] job=3/gpu[001-003]",
			"gpu003 4 nodes=3/3 id=2 tasks=6/6/6 per=2(x3)/2(x3) list=gpu[001-003]/gpu[001-003] job=3/gpu[001-003]\n" +
				"gpu003 5 nodes=3/3 id=2 tasks=6/6/6 per=2(x3)/2(x3) list=gpu[001-003]/gpu[001-003] job=3/gpu[001-003]"}},
		// Without scontrol (a container), the step's nodes by rank, commas
		// between; the job's --ntasks-per-node=2 does not give 3 tasks on
		// 2 nodes: srun drops it and says so, once.
		{[]string{"-N2", "-n3"}, []string{
			"gpu002 0 nodes=2/2 id=0 tasks=3/3/3 per=2,1/2,1 list=gpu[001-003]/gpu002,gpu001 job=3/gpu[001-003]\n" +
				"gpu002 1 nodes=2/2 id=0 tasks=3/3/3 per=2,1/2,1 list=gpu[001-003]/gpu002,gpu001 job=3/gpu[001-003]" +
				"|srun: Warning: can't honor --ntasks-per-node set to 2 which doesn't match the requested tasks 3 with the number of requested nodes 2. Ignoring --ntasks-per-node.\n",
			"gpu001 2 nodes=2/2 id=1 tasks=3/3/3 per=2,1/2,1 list=gpu[001-003]/gpu002,gpu001 job=3/gpu[001-003]", ""}},
		// -w's nodes in the job's order: gpu002 (rank 0) is the step's first.
		{[]string{"-w", "gpu[001-002]", "-N2", "-n2", "--ntasks-per-node=1"}, []string{
			"gpu002 0 nodes=2/2 id=0 tasks=2/2/2 per=1(x2)/1(x2) list=gpu[001-003]/gpu002,gpu001 job=3/gpu[001-003]",
			"gpu001 1 nodes=2/2 id=1 tasks=2/2/2 per=1(x2)/1(x2) list=gpu[001-003]/gpu002,gpu001 job=3/gpu[001-003]", ""}},
	} {
		got := onEveryNode(job, append(slices.Clone(tc.args), show...)...)
		for rank, want := range tc.want {
			if !strings.Contains(want, "|") {
				want += "|"
			}
			if got[rank] != want+"|0" {
				t.Errorf("srun %q on node %d (%s):\n got %q\nwant %q", tc.args, rank, job.nodes[rank], got[rank], want+"|0")
			}
		}
	}
}

// --export: ALL (the default) passes the environment on; NONE only the
// SLURM* variables and Phalanx's; a list of names (with values or not)
// those too. A value given wins over the one inherited, as Slurm's
// --export=ALL,OMP_NUM_THREADS=4 idiom expects.
func TestSrunShimExport(t *testing.T) {
	job := newFakeJob(t, []string{"gpu001"}, 1, "FOO=job", "HOME=/home/alice", "PHX_JOB_ID=7", "CUDA_VISIBLE_DEVICES=0,1",
		"MASTER_ADDR=gpu001")
	names := []string{"env"} // below, the names it prints, sorted
	show := []string{"sh", "-c", `echo FOO=$FOO BAR=$BAR`}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{show, "FOO=job BAR="},
		{append([]string{"--export=ALL,BAR=bar"}, show...), "FOO=job BAR=bar"},
		{append([]string{"--export=all,FOO=bar"}, show...), "FOO=bar BAR="},
		{append([]string{"--export=FOO,BAR=bar"}, show...), "FOO=job BAR=bar"},
		{append([]string{"--export=BAR=bar,FOO=bar"}, show...), "FOO=bar BAR=bar"},
		{append([]string{"--export=NONE,FOO"}, show...), "FOO= BAR="},
		{append([]string{"--export=NONE"}, names...), "CUDA_VISIBLE_DEVICES LOCAL_RANK MASTER_ADDR PHX_JOB_ID PHX_STEP_DIR RANK " +
			"SLURMD_NODENAME SLURM_DISTRIBUTION SLURM_GTIDS SLURM_JOB_ID SLURM_JOB_NODELIST SLURM_JOB_NUM_NODES SLURM_LOCALID SLURM_NNODES SLURM_NODEID " +
			"SLURM_NODELIST SLURM_NPROCS SLURM_NTASKS SLURM_PROCID SLURM_STEPID SLURM_STEP_ID " +
			"SLURM_STEP_NODELIST SLURM_STEP_NUM_NODES SLURM_STEP_NUM_TASKS SLURM_STEP_TASKS_PER_NODE SLURM_TASKS_PER_NODE SLURM_UMASK WORLD_SIZE"},
		{append([]string{"--export=HOME"}, names...), "CUDA_VISIBLE_DEVICES HOME LOCAL_RANK MASTER_ADDR PHX_JOB_ID PHX_STEP_DIR RANK " +
			"SLURMD_NODENAME SLURM_DISTRIBUTION SLURM_GTIDS SLURM_JOB_ID SLURM_JOB_NODELIST SLURM_JOB_NUM_NODES SLURM_LOCALID SLURM_NNODES SLURM_NODEID " +
			"SLURM_NODELIST SLURM_NPROCS SLURM_NTASKS SLURM_PROCID SLURM_STEPID SLURM_STEP_ID " +
			"SLURM_STEP_NODELIST SLURM_STEP_NUM_NODES SLURM_STEP_NUM_TASKS SLURM_STEP_TASKS_PER_NODE SLURM_TASKS_PER_NODE SLURM_UMASK WORLD_SIZE"},
	} {
		stdout, stderr, code := job.run(0, tc.args...)
		if tc.args[len(tc.args)-1] == "env" {
			var vars []string
			for _, kv := range strings.Split(strings.TrimSpace(stdout), "\n") {
				vars = append(vars, kv[:strings.IndexByte(kv+"=", '=')])
			}
			slices.Sort(vars)
			stdout = strings.Join(vars, " ") + "\n"
		}
		if stdout != tc.want+"\n" || stderr != "" || code != 0 {
			t.Errorf("srun %q: stdout %q stderr %q exit %d; want %q", tc.args, stdout, stderr, code, tc.want)
		}
	}
}

// --mpi=pmix or pmi2: srun says once, on the step's first node, that no
// PMI server runs; --mpi=list lists the one type Phalanx has, none.
func TestSrunShimMPI(t *testing.T) {
	job := newFakeJob(t, stepTestNodes, 1)
	note := "srun: warning: --mpi=pmix: Phalanx starts no PMI server, so MPI programs that use PMIx or PMI2 start as singletons: " +
		"use torchrun or NCCL, or mpirun with its own launcher\n"
	if got := onEveryNode(job, "--mpi=pmix", "echo", "x"); !slices.Equal(got, []string{"x|" + note + "|0", "x||0", "x||0"}) {
		t.Errorf("srun --mpi=pmix on 3 nodes: %q; want the note on the first only", got)
	}
	if got := onEveryNode(job, "-w", "gpu003", "-N1", "--mpi", "pmi2", "echo", "x"); !slices.Equal(got, []string{"||0", "||0", "x|" + strings.ReplaceAll(note, "pmix", "pmi2") + "|0"}) {
		t.Errorf("srun -w gpu003 --mpi pmi2: %q; want the note on gpu003, the step's first node", got)
	}
	if got := onEveryNode(job, "--mpi=none", "echo", "x"); !slices.Equal(got, []string{"x||0", "x||0", "x||0"}) {
		t.Errorf("srun --mpi=none: %q", got)
	}
	if stdout, stderr, code := job.run(1, "--mpi=list"); stdout != "MPI plugin types are...\n\tnone\n" || stderr != "" || code != 0 {
		t.Errorf("srun --mpi=list: stdout %q stderr %q exit %d", stdout, stderr, code)
	}
	if _, stderr, code := job.run(0, "--mpi=openmpi", "echo", "x"); stderr != "srun: error: Invalid MPI type 'openmpi', --mpi=list for acceptable types\n" || code != 1 {
		t.Errorf("srun --mpi=openmpi: stderr %q exit %d", stderr, code)
	}
}

// -w with -N, as Slurm's srun: more of the job's nodes (the first others,
// in the job's order) make up a larger -N; of more nodes than -N, the
// first are kept, and srun says so. -w names a file of host names when it
// holds a /. (No scontrol here, as in a container: the step's node list
// is not compressed.)
func TestSrunShimNodelistWithNodeCount(t *testing.T) {
	job := newFakeJob(t, stepTestNodes, 1) // gpu002, gpu001, gpu003 by rank
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("gpu003\n gpu001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eliminated := "srun: error: Required nodelist includes more nodes than permitted by max-node count (2 > 1). Eliminating nodes from the nodelist.\n"
	for _, tc := range []struct {
		args []string
		want []string // by rank: stdout|stderr|code
	}{
		{[]string{"-w", "gpu003", "-N2", "sh", "-c", "echo $SLURM_NODEID/$SLURM_NNODES"}, []string{"0/2||0", "||0", "1/2||0"}},
		{[]string{"-w", "gpu001", "-N3", "sh", "-c", "echo $SLURM_NODEID"}, []string{"0||0", "1||0", "2||0"}},
		{[]string{"-w", "gpu[001,003]", "-N1", "echo", "x"}, []string{"|" + eliminated + "|0", "x|" + eliminated + "|0", "|" + eliminated + "|0"}},
		{[]string{"-w", hosts, "-N2", "sh", "-c", "echo $SLURM_STEP_NODELIST"}, []string{"||0", "gpu001,gpu003||0", "gpu001,gpu003||0"}},
		{[]string{"-w", hosts + ".missing", "echo", "x"}, nil},
		{[]string{"-w", "gpu003", "-N4", "echo", "x"}, nil},
	} {
		got := onEveryNode(job, tc.args...)
		if tc.want == nil {
			if !strings.HasSuffix(got[0], "|1") || !strings.Contains(got[0], "srun: error: ") {
				t.Errorf("srun %q: %q; want it refused", tc.args, got)
			}
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("srun %q: %q; want %q", tc.args, got, tc.want)
		}
	}
}

// srun as Slurm 22.05's, on what the audit against it found: -n alone
// spreads over the job's nodes (block: 4 on 3 are 2,1,1) and says when it
// takes fewer nodes; srun's input variables act as its options; -l pads to
// the widest task number; a command that is not there fails as a task
// whose execve failed (status 2).
func TestSrunShimAsSlurm2205(t *testing.T) {
	job := newFakeJob(t, stepTestNodes, 2)
	for _, tc := range []struct {
		args []string
		want []string // by rank
	}{
		{[]string{"-n", "4", "sh", "-c", "echo $SLURM_PROCID/$SLURM_TASKS_PER_NODE"}, []string{"0/2,1(x2)\n1/2,1(x2)|srun: Warning: can't honor --ntasks-per-node " +
			"set to 2 which doesn't match the requested tasks 4 with the number of requested nodes 3. Ignoring --ntasks-per-node.\n|0", "2/2,1(x2)||0", "3/2,1(x2)||0"}},
		{[]string{"-n", "2", "sh", "-c", "echo $SLURM_PROCID/$SLURM_NNODES"},
			[]string{"0/2|srun: Warning: can't run 2 processes on 3 nodes, setting nnodes to 2\n|0", "1/2||0", "||0"}},
		{[]string{"-n", "1", "/no/such/program"}, []string{"|srun: Warning: can't run 1 processes on 3 nodes, setting nnodes to 1\n" +
			"slurmstepd-gpu002: error: execve(): /no/such/program: No such file or directory\nsrun: error: gpu002: task 0: Exited with exit code 2\n|2", "||0", "||0"}},
		{[]string{"-l", "-N1", "-n2", "/no/such/program"}, []string{"0: slurmstepd-gpu002: error: execve(): /no/such/program: No such file or directory\n" +
			"1: slurmstepd-gpu002: error: execve(): /no/such/program: No such file or directory|srun: error: gpu002: tasks 0-1: Exited with exit code 2\n|2", "||0", "||0"}},
	} {
		if got := onEveryNode(job, tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("srun %q: %q; want %q", tc.args, got, tc.want)
		}
	}
	// Input variables: SLURM_LABELIO, SLURM_EXPORT_ENV (SRUN_EXPORT_ENV
	// first), SLURM_MPI_TYPE (refused as Slurm's srun refuses it, whatever
	// --mpi says).
	job = newFakeJob(t, []string{"gpu001"}, 12, "SLURM_LABELIO=1", "SLURM_EXPORT_ENV=NONE", "SRUN_EXPORT_ENV=FOO", "FOO=foo", "BAR=bar")
	stdout, stderr, code := job.run(0, "-n", "11", "sh", "-c", `echo "$FOO$BAR"`)
	if code != 0 || !strings.Contains(stdout, " 0: foo\n") || !strings.Contains(stdout, "10: foo\n") || stderr != "" {
		t.Errorf("srun -n 11 with SLURM_LABELIO=1 and SRUN_EXPORT_ENV=FOO: %q %q exit %d; want padded labels and FOO alone", stdout, stderr, code)
	}
	job = newFakeJob(t, []string{"gpu001"}, 1, "SLURM_MPI_TYPE=bogus")
	if _, stderr, code := job.run(0, "--mpi=none", "true"); code != 1 || !strings.Contains(stderr, "Invalid MPI type 'bogus'") {
		t.Errorf("srun with SLURM_MPI_TYPE=bogus: %q exit %d; want it refused as --mpi=bogus", stderr, code)
	}
}

// srun's node and task counts as Slurm 22.05's srun takes them, checked
// live against it (slurmctld and two slurmd): its options, else its input
// variables, which are the job's (SLURM_NNODES as -N, SLURM_NTASKS as -n,
// SLURM_NTASKS_PER_NODE as --ntasks-per-node; sbatch sets the last two only
// when -n or --ntasks-per-node was given); -w raises the node count to the
// job's; --ntasks-per-node that does not give the task count is dropped.
func TestSrunShimCountsAsSlurm2205(t *testing.T) {
	nodes := []string{"gpu001", "gpu002"}
	honor := func(per, n, m int) string {
		return fmt.Sprintf("srun: Warning: can't honor --ntasks-per-node set to %d which doesn't match the requested tasks %d with the number of requested nodes %d. Ignoring --ntasks-per-node.\n", per, n, m)
	}
	cpus := "srun: error: Unable to create step for job 7: More processors requested than permitted\n"
	runOne := "srun: Warning: can't run 1 processes on 2 nodes, setting nnodes to 1\n"
	jobs := map[string]*fakeJob{
		"-N2 --ntasks-per-node=2": newFakeJob(t, nodes, 2, "SLURM_CPUS_ON_NODE=2"),
		"-N2":                     newFakeJob(t, nodes, 1, "SLURM_CPUS_ON_NODE=1"),
		"-N1 -n3":                 newFakeJob(t, nodes[:1], 3, "SLURM_CPUS_ON_NODE=3", "SLURM_NTASKS_PER_NODE="),
	}
	for _, tc := range []struct {
		job  string
		args []string
		want string // SLURM_STEP_TASKS_PER_NODE, or the error; then node 0's first warning
	}{
		{"-N2 --ntasks-per-node=2", nil, "2(x2)"},
		{"-N2 --ntasks-per-node=2", []string{"-N1"}, "refused|" + honor(2, 4, 1) + cpus},
		{"-N2 --ntasks-per-node=2", []string{"-n1"}, "1 on gpu001|" + runOne},
		{"-N2 --ntasks-per-node=2", []string{"-n3"}, "2,1|" + honor(2, 3, 2)},
		{"-N2 --ntasks-per-node=2", []string{"--ntasks-per-node=1"}, "2(x2)|" + honor(1, 4, 2)},
		{"-N2 --ntasks-per-node=2", []string{"-n2", "--ntasks-per-node=2"}, "1(x2)"},
		{"-N2 --ntasks-per-node=2", []string{"-N1", "-n2"}, "2 on gpu001"},
		{"-N2 --ntasks-per-node=2", []string{"-w", "gpu002"}, "2(x2)"},
		{"-N2 --ntasks-per-node=2", []string{"-w", "gpu002", "-n1"}, "1 on gpu002|" + runOne},
		{"-N2 --ntasks-per-node=2", []string{"-N2", "--ntasks-per-node=1"}, "2(x2)|" + honor(1, 4, 2)},
		{"-N2", nil, "1(x2)"},
		{"-N2", []string{"-n3"}, "refused|" + cpus},
		{"-N2", []string{"-n2", "--ntasks-per-node=2"}, "1(x2)"},
		{"-N2", []string{"--ntasks-per-node=1"}, "1(x2)"},
		{"-N2", []string{"-w", "gpu002"}, "1(x2)"},
		{"-N2", []string{"-w", "gpu002", "-N1"}, "1 on gpu002"},
		{"-N1 -n3", nil, "3"},
		{"-N1 -n3", []string{"--ntasks-per-node=1"}, "3|" + honor(1, 3, 1)},
		{"-N1 -n3", []string{"-n2", "--ntasks-per-node=1"}, "2|" + honor(1, 2, 1)},
	} {
		job := jobs[tc.job]
		got := onEveryNode(job, append(slices.Clone(tc.args), "sh", "-c", "echo $SLURM_STEP_TASKS_PER_NODE")...)
		// What the step's tasks printed (their SLURM_STEP_TASKS_PER_NODE,
		// and where a step of one node of two ran), or "refused"; then
		// what node 0 said, but for Phalanx's hint after a refusal.
		layout, ran := "", []string{}
		for rank, g := range got {
			if out, _, _ := strings.Cut(g, "|"); out != "" {
				layout, _, _ = strings.Cut(out, "\n")
				ran = append(ran, job.nodes[rank])
			}
		}
		switch {
		case strings.HasSuffix(got[0], "|1"):
			layout = "refused"
		case len(job.nodes) > 1 && len(ran) == 1:
			layout += " on " + ran[0]
		}
		var said []string
		for _, l := range strings.SplitAfter(strings.Split(got[0], "|")[1], "\n") {
			if l != "" && !strings.HasPrefix(l, "srun: error: the step puts") {
				said = append(said, l)
			}
		}
		if len(said) > 0 {
			layout += "|" + strings.Join(said, "")
		}
		if layout != tc.want {
			t.Errorf("srun %q in a job of sbatch %s: %q (%q); want %q", tc.args, tc.job, layout, got, tc.want)
		}
	}
}

// The step's other variables, as Slurm 22.05's srun and slurmstepd set
// them (checked live): SLURM_GTIDS, the node's tasks; SLURM_STEP_GPUS, the
// task's GPUs by host index (the node's without a count per task), and
// SLURM_GPUS_ON_NODE the step's there; SLURM_LABELIO with -l;
// SLURM_DISTRIBUTION cyclic for no more tasks than nodes, else block (-m
// as given); SLURM_UMASK, srun's umask.
func TestSrunShimStepVariablesAsSlurm2205(t *testing.T) {
	job := newFakeJob(t, []string{"gpu001", "gpu002"}, 2, "SLURM_JOB_GPUS=4,5,6,7", "CUDA_VISIBLE_DEVICES=4,5,6,7", "SLURM_GPUS_ON_NODE=4")
	show := []string{"sh", "-c", `echo "gtids=$SLURM_GTIDS gpus=$SLURM_STEP_GPUS/$CUDA_VISIBLE_DEVICES/$SLURM_GPUS_ON_NODE ` +
		`label=$SLURM_LABELIO dist=$SLURM_DISTRIBUTION umask=$([ "$SLURM_UMASK" = "$(umask)" ] && echo same)"`}
	for _, tc := range []struct {
		args []string
		want []string // by rank
	}{
		{nil, []string{
			"gtids=0,1 gpus=4,5,6,7/4,5,6,7/4 label= dist=block umask=same\ngtids=0,1 gpus=4,5,6,7/4,5,6,7/4 label= dist=block umask=same||0",
			"gtids=2,3 gpus=4,5,6,7/4,5,6,7/4 label= dist=block umask=same\ngtids=2,3 gpus=4,5,6,7/4,5,6,7/4 label= dist=block umask=same||0"}},
		{[]string{"--gpus-per-task=2", "-l"}, []string{
			"0: gtids=0,1 gpus=4,5/4,5/4 label=1 dist=block umask=same\n1: gtids=0,1 gpus=6,7/6,7/4 label=1 dist=block umask=same||0",
			"2: gtids=2,3 gpus=4,5/4,5/4 label=1 dist=block umask=same\n3: gtids=2,3 gpus=6,7/6,7/4 label=1 dist=block umask=same||0"}},
		{[]string{"-n2", "--gpus-per-task=1"}, []string{
			"gtids=0 gpus=4/4/1 label= dist=cyclic umask=same||0", "gtids=1 gpus=4/4/1 label= dist=cyclic umask=same||0"}},
		{[]string{"-m", "block:cyclic", "-n2"}, []string{
			"gtids=0 gpus=4,5,6,7/4,5,6,7/4 label= dist=block:cyclic umask=same||0", "gtids=1 gpus=4,5,6,7/4,5,6,7/4 label= dist=block:cyclic umask=same||0"}},
	} {
		if got := onEveryNode(job, append(slices.Clone(tc.args), show...)...); !slices.Equal(got, tc.want) {
			t.Errorf("srun %q:\n got %q\nwant %q", tc.args, got, tc.want)
		}
	}
}
