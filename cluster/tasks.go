package cluster

// Tasks. Phalanx runs a job's batch script once on each of its nodes (the
// node's rank); Slurm's tasks are what srun starts inside it: TasksPerNode
// on every node, numbered SLURM_PROCID = rank × TasksPerNode + SLURM_LOCALID.
// The scheduler sees only the node's totals (GPUsPerNode, CPUsPerNode):
// the tasks split them, GPUsPerTask GPUs each when it is set.

// MaxTasksPerNode bounds --ntasks-per-node.
const MaxTasksPerNode = 1024

// MaxHostName bounds SubmitHost (a host name, as HOST_NAME_MAX).
const MaxHostName = 255

// RequestForm says which of sbatch's options gave a job's tasks, GPUs and
// memory; the job's counts hold the totals either way. Slurm sets some of
// its variables only after the option given: SLURM_NTASKS after -n (or
// --gpus-per-task, which sbatch reads as giving one) or
// --ntasks-per-node, SLURM_NTASKS_PER_NODE after --ntasks-per-node,
// SLURM_GPUS_PER_NODE after --gpus-per-node, SLURM_GPUS after -G, and
// SLURM_MEM_PER_CPU or SLURM_MEM_PER_GPU (in place of SLURM_MEM_PER_NODE)
// after --mem-per-cpu or --mem-per-gpu. Recorded is false for a job
// submitted before the form was recorded.
type RequestForm struct {
	Recorded                                 bool
	NTasks, NTasksPerNode, GPUsPerNode, GPUs bool
	MemPerCPUMB, MemPerGPUMB                 int64
}

// NodeTasks is the number of tasks on each node: TasksPerNode, at least 1.
func (j *Job) NodeTasks() int { return max(1, j.TasksPerNode) }

// CheckTasks checks the job's tasks against its per-node totals, and sets
// CPUsPerNode from CPUsPerTask when only the latter is given.
func (j *Job) CheckTasks() error {
	t := j.NodeTasks()
	switch {
	case j.TasksPerNode < 0 || j.TasksPerNode > MaxTasksPerNode:
		return Errorf(ErrInvalid, "--ntasks-per-node=%d: give 1 to %d", j.TasksPerNode, MaxTasksPerNode)
	case j.GPUsPerTask < 0 || j.CPUsPerTask < 0:
		return Errorf(ErrInvalid, "--gpus-per-task and --cpus-per-task must not be negative")
	case j.GPUsPerTask > 0 && j.GPUsPerTask*t > j.GPUsPerNode:
		return Errorf(ErrInvalid, "--gpus-per-task=%d with %d tasks per node is %d GPUs per node, but the job asks for %d: ask for %d GPUs per node, or fewer per task",
			j.GPUsPerTask, t, j.GPUsPerTask*t, j.GPUsPerNode, j.GPUsPerTask*t)
	case j.CPUsPerTask > 0 && j.CPUsPerNode > 0 && j.CPUsPerTask*t > j.CPUsPerNode:
		return Errorf(ErrInvalid, "--cpus-per-task=%d with %d tasks per node is %d CPUs per node, but the job asks for %d",
			j.CPUsPerTask, t, j.CPUsPerTask*t, j.CPUsPerNode)
	case j.RequestForm.MemPerCPUMB < 0 || j.RequestForm.MemPerGPUMB < 0:
		return Errorf(ErrInvalid, "--mem-per-cpu and --mem-per-gpu must not be negative")
	case len(j.SubmitHost) > MaxHostName:
		return Errorf(ErrInvalid, "submit host name of %d bytes: at most %d", len(j.SubmitHost), MaxHostName)
	}
	if j.CPUsPerTask > 0 && j.CPUsPerNode == 0 {
		j.CPUsPerNode = j.CPUsPerTask * t
	}
	return nil
}
