package cluster

import (
	"fmt"
	"math"
)

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
// SLURM_GPUS_PER_NODE after --gpus-per-node, SLURM_GPUS after -G,
// SLURM_GPUS_PER_TASK after --gpus-per-task, and
// SLURM_MEM_PER_CPU or SLURM_MEM_PER_GPU (in place of SLURM_MEM_PER_NODE)
// after --mem-per-cpu or --mem-per-gpu. Recorded is false for a job
// submitted before the form was recorded.
type RequestForm struct {
	Recorded                                 bool
	NTasks, NTasksPerNode, GPUsPerNode, GPUs bool
	MemPerCPUMB, MemPerGPUMB                 int64
	// GPUsSplit: -G alone gave the GPUs (no --gpus-per-node, --gres or
	// --gpus-per-task), its total split evenly over the nodes, so that a
	// new node count splits it again (SetNodes). False for a job recorded
	// before it was.
	GPUsSplit bool
	// GPUsPerTask: --gpus-per-task was given, 0 too (SLURM_GPUS_PER_TASK);
	// a job recorded before it was has it set by a count above 0 only.
	GPUsPerTask bool
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
	case j.RequestForm.GPUsSplit && (!j.RequestForm.GPUs || j.RequestForm.GPUsPerNode || j.RequestForm.GPUsPerTask || j.GPUsPerTask > 0):
		return Errorf(ErrInvalid, "the request form says -G alone gave the GPUs, beside another GPU option or without -G: leave gpus_split out")
	case len(j.SubmitHost) > MaxHostName:
		return Errorf(ErrInvalid, "submit host name of %d bytes: at most %d", len(j.SubmitHost), MaxHostName)
	}
	if j.CPUsPerTask > 0 && j.CPUsPerNode == 0 {
		j.CPUsPerNode = j.CPUsPerTask * t
	}
	return nil
}

// SetNodes gives pending job j n nodes (scontrol update NumNodes=),
// keeping the GPUs it asked for in all with -G: Slurm keeps the total
// (SLURM_GPUS, set at submit, stays) and spreads it over the new nodes,
// unevenly where it must (4 on 3 nodes: 2, 1 and 1). Every node of a
// Phalanx job has the same GPUs, so a job whose GPUs are -G's total split
// over its nodes (RequestForm.GPUsSplit) has it split again, with its
// --mem-per-gpu memory, and a total n nodes cannot share evenly is
// refused. So is a new count for a job that gave -G beside GPUs per node
// or per task: its total would no longer be what they make (Slurm takes
// such an update, gives the job its GPUs per node on the new nodes and
// keeps SLURM_GPUS at a total the job no longer has; on fewer nodes its
// own srun then refuses the job's steps). A total of 0 has nothing to keep.
func (j *Job) SetNodes(n int) error {
	switch {
	case n < 1:
		return Errorf(ErrInvalid, "NumNodes=%d: ask for at least 1 node", n)
	case n == j.Nodes || !j.RequestForm.GPUs:
		j.Nodes = n
		return nil
	}
	total := int64(j.GPUsPerNode) * int64(j.Nodes)
	if total == 0 {
		j.Nodes = n
		return nil
	}
	gpus := fmt.Sprintf("--gpus=%d", total)
	if j.GPUType != "" {
		gpus = fmt.Sprintf("--gpus=%s:%d", j.GPUType, total)
	}
	if !j.RequestForm.GPUsSplit {
		return Errorf(ErrInvalid, "NumNodes=%d: job %d asked for %s with GPUs per node or per task, which make %d nodes: keep NumNodes=%d, or cancel the job and submit it again with -N %d",
			n, j.ID, gpus, j.Nodes, j.Nodes, n)
	}
	if total%int64(n) != 0 {
		return Errorf(ErrInvalid, "NumNodes=%d: job %d asked for %s, which %d nodes cannot share evenly (every node gets the same GPUs): give a node count that divides %d",
			n, j.ID, gpus, n, total)
	}
	per := total / int64(n)
	mem := j.MemoryMB
	if perGPU := j.RequestForm.MemPerGPUMB; perGPU > 0 {
		if per > 0 && perGPU > math.MaxInt64/per {
			return Errorf(ErrInvalid, "NumNodes=%d: job %d's --mem-per-gpu=%d times %d GPUs a node is more memory than any node has: give more nodes", n, j.ID, perGPU, per)
		}
		mem = perGPU * per
	}
	j.Nodes, j.GPUsPerNode, j.MemoryMB = n, int(per), mem
	return nil
}
