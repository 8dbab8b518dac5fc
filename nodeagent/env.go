package nodeagent

import (
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// defaultPath is the PATH a plain process gets when its job exports none.
// A container keeps its image's PATH instead.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// envInput is what one task's environment is derived from.
type envInput struct {
	job  jobInfo
	rank int
	// container: GPUs are injected through CDI and the task sees only its
	// own, renumbered from 0; a process sees the host's indices.
	container bool
	// cluster is SLURM_CLUSTER_NAME; empty leaves it unset.
	cluster string
	// nodeCPUs are the node's CPUs: SLURM_CPUS_ON_NODE of a job that holds
	// it whole.
	nodeCPUs int
	// uid and gid the task runs as (SLURM_JOB_UID, SLURM_JOB_GID).
	uid, gid int
}

// taskEnv builds a task's complete environment: the job's exported
// variables (sorted by name; a plain process gets a default PATH when the
// job sets none), then the Slurm, PyTorch and Phalanx variables, in a fixed
// order. Phalanx's variables win: a job variable with the same name as one
// of them is dropped.
func taskEnv(in envInput) []string {
	ours := launchVars(in)
	set := make(map[string]bool, len(ours))
	for _, kv := range ours {
		set[kv[:strings.IndexByte(kv, '=')]] = true
	}
	jobEnv := in.job.env
	keys := make([]string, 0, len(jobEnv)+1)
	for k := range jobEnv {
		if !set[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys)+len(ours)+1)
	for _, k := range keys {
		env = append(env, k+"="+jobEnv[k])
	}
	if _, ok := jobEnv["PATH"]; !ok && !in.container {
		env = append(env, "PATH="+defaultPath)
	}
	return append(env, ours...)
}

// taskIDs are the user and group IDs a job's tasks run as: the job's, or
// the agent's own where it has none (idOrKeep).
func taskIDs(job jobInfo) (uid, gid int) {
	uid, gid = os.Getuid(), os.Getgid()
	if job.uid > 0 {
		uid = job.uid
	}
	if job.gid > 0 {
		gid = job.gid
	}
	return uid, gid
}

// launchVars are the variables every task gets, in order.
func launchVars(in envInput) []string {
	job := in.job
	nodes := strconv.Itoa(len(job.ranks))
	rank := strconv.Itoa(in.rank)
	perNode := max(1, job.tasksPerNode)
	jobID := strconv.FormatUint(job.id, 10)
	nodelist := hostlist.Compress(job.nodeNames())
	gpus := localGPUs(job.ranks, in.rank, in.container)
	master, port := masterAddr(job.ranks), strconv.Itoa(job.masterPort)
	attempt := strconv.Itoa(job.attempt)

	// The batch script is its node's first task; srun numbers the rest.
	procID := strconv.Itoa(in.rank * perNode)
	vars := []string{
		"SLURM_JOB_ID=" + jobID,
		"SLURM_JOBID=" + jobID,
		"SLURM_JOB_NAME=" + job.name,
		"SLURM_JOB_NODELIST=" + nodelist,
		"SLURM_NODELIST=" + nodelist,
		"SLURM_NNODES=" + nodes,
		"SLURM_JOB_NUM_NODES=" + nodes,
		"SLURM_NODEID=" + rank,
		"SLURM_PROCID=" + procID,
		"SLURM_GTIDS=" + procID,
		"SLURM_LOCALID=0",
	}
	// As Slurm's, after -n or --ntasks-per-node only (srun reads them as
	// its -n and --ntasks-per-node); always for a job from before the
	// request form was recorded.
	form := job.form
	if !form.Recorded || form.NTasks || form.NTasksPerNode {
		tasks := strconv.Itoa(len(job.ranks) * perNode)
		vars = append(vars, "SLURM_NTASKS="+tasks, "SLURM_NPROCS="+tasks)
	}
	if !form.Recorded || form.NTasksPerNode {
		vars = append(vars, "SLURM_NTASKS_PER_NODE="+strconv.Itoa(perNode))
	}
	vars = append(vars, "SLURM_TASKS_PER_NODE="+batchTasksPerNode(in))
	if len(gpus) > 0 {
		vars = append(vars, "SLURM_GPUS_ON_NODE="+strconv.Itoa(len(gpus)))
	}
	vars = append(vars,
		"SLURM_JOB_PARTITION="+job.partition,
		"SLURM_SUBMIT_DIR="+job.workDir,
		"SLURM_JOB_USER="+job.user,
		"SLURM_JOB_UID="+strconv.Itoa(in.uid),
		"SLURM_JOB_GID="+strconv.Itoa(in.gid),
		"SLURMD_NODENAME="+job.ranks[in.rank].node,
	)
	if job.attempt > 0 { // as Slurm's: only once the job has restarted
		vars = append(vars, "SLURM_RESTART_COUNT="+attempt)
	}
	if in.cluster != "" {
		vars = append(vars, "SLURM_CLUSTER_NAME="+in.cluster)
	}
	if cpus := cpusOnNode(in); cpus > 0 {
		vars = append(vars, "SLURM_CPUS_ON_NODE="+strconv.Itoa(cpus))
	}
	if job.submitHost != "" {
		vars = append(vars, "SLURM_SUBMIT_HOST="+job.submitHost)
	}
	if job.cpusPerTask > 0 {
		vars = append(vars, "SLURM_CPUS_PER_TASK="+strconv.Itoa(job.cpusPerTask))
	}
	if per := cpusPerNode(in); per != "" {
		vars = append(vars, "SLURM_JOB_CPUS_PER_NODE="+per)
	}
	vars = append(vars, memVars(job, job.ranks[in.rank].memMB)...)
	if len(gpus) > 0 {
		// The node's GPUs as the host numbers them, as slurmd sets it.
		vars = append(vars, "SLURM_JOB_GPUS="+joinInts(job.ranks[in.rank].gpus))
	}
	vars = append(vars, gpuRequestVars(job)...)
	if a := job.array; a != nil {
		vars = append(vars,
			"SLURM_ARRAY_JOB_ID="+strconv.FormatUint(uint64(a.JobID), 10),
			"SLURM_ARRAY_TASK_ID="+strconv.Itoa(a.TaskID),
			"SLURM_ARRAY_TASK_COUNT="+strconv.Itoa(a.Count),
			"SLURM_ARRAY_TASK_MIN="+strconv.Itoa(a.Min),
			"SLURM_ARRAY_TASK_MAX="+strconv.Itoa(a.Max),
			"SLURM_ARRAY_TASK_STEP="+strconv.Itoa(a.Step))
	}
	return append(vars,
		"MASTER_ADDR="+master,
		"MASTER_PORT="+port,
		"WORLD_SIZE="+nodes,
		"RANK="+rank,
		"NODE_RANK="+rank,
		"LOCAL_WORLD_SIZE="+strconv.Itoa(max(1, len(gpus))),
		"PET_NNODES="+nodes,
		"PET_NODE_RANK="+rank,
		"PET_MASTER_ADDR="+master,
		"PET_MASTER_PORT="+port,
		"CUDA_VISIBLE_DEVICES="+joinInts(gpus),
		"PHX_JOB_ID="+jobID,
		"PHX_ATTEMPT="+attempt,
	)
}

// memVars are the job's memory variables, in MB as sbatch takes them:
// SLURM_MEM_PER_CPU or SLURM_MEM_PER_GPU after --mem-per-cpu or
// --mem-per-gpu, else SLURM_MEM_PER_NODE, the node's (mem: what the job
// holds there; none without a memory request).
func memVars(job jobInfo, mem int64) []string {
	switch {
	case job.form.MemPerCPUMB > 0:
		return []string{"SLURM_MEM_PER_CPU=" + strconv.FormatInt(job.form.MemPerCPUMB, 10)}
	case job.form.MemPerGPUMB > 0:
		return []string{"SLURM_MEM_PER_GPU=" + strconv.FormatInt(job.form.MemPerGPUMB, 10)}
	case mem > 0:
		return []string{"SLURM_MEM_PER_NODE=" + strconv.FormatInt(mem, 10)}
	}
	return nil
}

// gpuRequestVars are the GPU counts the job asked, in the form asked, as
// Slurm sets them: SLURM_GPUS_PER_NODE after --gpus-per-node,
// SLURM_GPUS after -G (the total), SLURM_GPUS_PER_TASK after
// --gpus-per-task (0 too, as for the others; a job from before the form
// said so has it after a count above 0); TYPE:N when a type was asked
// (sbatch takes one in all of a job's GPU options or in none).
func gpuRequestVars(job jobInfo) []string {
	count := func(n int) string {
		if job.gpuType != "" {
			return job.gpuType + ":" + strconv.Itoa(n)
		}
		return strconv.Itoa(n)
	}
	var vars []string
	// 0 too, when it was asked (--gpus=0), as Slurm's. sbatch checks -G
	// against the other counts, so the total is the nodes' GPUs.
	if job.form.GPUsPerNode {
		vars = append(vars, "SLURM_GPUS_PER_NODE="+count(job.gpusPerNode))
	}
	if job.form.GPUs {
		vars = append(vars, "SLURM_GPUS="+count(job.gpusPerNode*len(job.ranks)))
	}
	if job.form.GPUsPerTask || job.gpusPerTask > 0 {
		vars = append(vars, "SLURM_GPUS_PER_TASK="+count(job.gpusPerTask))
	}
	return vars
}

// batchTasksPerNode is the batch script's SLURM_TASKS_PER_NODE: the job's
// tasks on each node; for a job of one node held whole that did not give
// them (-n, --ntasks-per-node), as many as its CPUs hold (-c each), as
// Slurm counts them.
func batchTasksPerNode(in envInput) string {
	job := in.job
	if f := job.form; job.exclusive && len(job.ranks) == 1 && f.Recorded && !f.NTasks && !f.NTasksPerNode && in.nodeCPUs > 0 {
		return strconv.Itoa(max(1, in.nodeCPUs/max(1, job.cpusPerTask)))
	}
	return tasksPerNode(max(1, job.tasksPerNode), len(job.ranks))
}

// tasksPerNode is SLURM_TASKS_PER_NODE: "8(x2)" for 8 tasks on each of 2
// nodes, "8" on one.
func tasksPerNode(perNode, nodes int) string {
	if nodes == 1 {
		return strconv.Itoa(perNode)
	}
	return strconv.Itoa(perNode) + "(x" + strconv.Itoa(nodes) + ")"
}

// masterAddr is rank 0's address, or its node name when it has none.
func masterAddr(ranks []rankSlot) string {
	if len(ranks) == 0 {
		return ""
	}
	if ranks[0].addr != "" {
		return ranks[0].addr
	}
	return ranks[0].node
}

// localGPUs are the GPU indices rank's task uses, as the task numbers them:
// the host's indices for a process, 0..n-1 inside a container.
func localGPUs(ranks []rankSlot, rank int, container bool) []int {
	if rank < 0 || rank >= len(ranks) {
		return nil
	}
	host := ranks[rank].gpus
	gpus := make([]int, len(host))
	for i, g := range host {
		gpus[i] = g
		if container {
			gpus[i] = i
		}
	}
	return gpus
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// cpusPerNode is SLURM_JOB_CPUS_PER_NODE: the CPUs the job holds on each
// of its nodes, in order, runs of equal counts as Slurm writes them
// ("16(x2),8"); "" when a node's count is not known (an exclusive job
// holds whole nodes, which only their own agents count).
func cpusPerNode(in envInput) string {
	var runs []string
	count, n := 0, 0
	flush := func() {
		if n == 0 {
			return
		}
		s := strconv.Itoa(count)
		if n > 1 {
			s += "(x" + strconv.Itoa(n) + ")"
		}
		runs = append(runs, s)
	}
	for i, r := range in.job.ranks {
		c := r.cpus
		if in.job.exclusive {
			c = 0
			if i == in.rank || len(in.job.ranks) == 1 {
				c = in.nodeCPUs
			}
		}
		if c <= 0 {
			return ""
		}
		if c != count {
			flush()
			count, n = c, 0
		}
		n++
	}
	flush()
	return strings.Join(runs, ",")
}

// cpusOnNode is SLURM_CPUS_ON_NODE: the CPUs the job holds on the task's
// node, all of them for a job that holds it whole (or whose allocation
// counts none: a controller older than CPUs per task); 0: unknown.
func cpusOnNode(in envInput) int {
	if cpus := in.job.ranks[in.rank].cpus; cpus > 0 && !in.job.exclusive {
		return cpus
	}
	return in.nodeCPUs
}
