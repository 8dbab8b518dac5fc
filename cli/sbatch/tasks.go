package sbatch

import (
	"fmt"
	"math"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// Tasks. A Phalanx job runs the same number of tasks on each of its nodes
// (cluster/tasks.go), so -n, -N and --ntasks-per-node must agree: any two
// give the third, and -n alone runs every task on one node.

// resolveTasks sets the spec's tasks per node from -n, -N and
// --ntasks-per-node, and its CPUs from -c.
func (b *builder) resolveTasks() error {
	s := b.spec
	t := b.tasksPerNode
	switch {
	case b.ntasks > 0 && t > 0 && !b.nodesSet:
		if b.ntasks%t != 0 {
			return fmt.Errorf("-n %d is not a multiple of --ntasks-per-node=%d: Phalanx runs the same number of tasks on every node", b.ntasks, t)
		}
		s.Nodes = b.ntasks / t
	case b.ntasks > 0 && t > 0:
		if int64(b.ntasks) != int64(t)*int64(s.Nodes) {
			if b.nodesFrom != "" {
				return fmt.Errorf("-n %d is not %s (%s) times --ntasks-per-node=%d: give -n %d, or leave it out",
					b.ntasks, plural(int64(s.Nodes), "node"), b.nodesFrom, t, int64(t)*int64(s.Nodes))
			}
			return fmt.Errorf("-n %d is not -N %d times --ntasks-per-node=%d: give two of the three", b.ntasks, s.Nodes, t)
		}
	case b.ntasks > 0:
		if b.ntasks%s.Nodes != 0 {
			return fmt.Errorf("-n %d does not split evenly over %d nodes (-N): Phalanx runs the same number of tasks on every node; give a multiple of -N, or --ntasks-per-node", b.ntasks, s.Nodes)
		}
		t = b.ntasks / s.Nodes
	}
	if t > 1 {
		s.TasksPerNode = t
	}
	if b.cpusPerTask > 0 {
		cpus := int64(b.cpusPerTask) * int64(max(t, 1))
		if cpus > math.MaxInt32 {
			return fmt.Errorf("--cpus-per-task=%d with %d tasks per node is more CPUs than any node has: ask for fewer", b.cpusPerTask, t)
		}
		s.CpusPerTask, s.CpusPerNode = b.cpusPerTask, int32(cpus)
	}
	return nil
}

// resolveMemory turns --mem-per-cpu and --mem-per-gpu into memory per
// node, after resolveTasks and resolveGPUs. As in Slurm, a job gives at
// most one of --mem, --mem-per-cpu and --mem-per-gpu; a task without -c
// counts one CPU.
func (b *builder) resolveMemory() error {
	s := b.spec
	given := 0
	for _, set := range []bool{s.MemoryMb > 0, b.memPerCPU > 0, b.memPerGPU > 0} {
		if set {
			given++
		}
	}
	if b.memWhole {
		given++
	}
	if given > 1 {
		return fmt.Errorf("--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive")
	}
	if b.memWhole { // all of each node's memory: the node itself
		s.Exclusive = true
		b.warnings.add("--mem=0 asks for all of each node's memory: the job gets whole nodes (--exclusive)")
		return nil
	}
	per, count, what := b.memPerCPU, int64(s.CpusPerNode), "CPUs"
	if count == 0 {
		count = int64(max(s.TasksPerNode, 1))
	}
	if b.memPerGPU > 0 {
		per, count, what = b.memPerGPU, int64(s.GpusPerNode), "GPUs"
		if count == 0 {
			return fmt.Errorf("--mem-per-gpu: the job asks for no GPUs (give --gpus-per-node, --gpus-per-task, --gpus or --gres=gpu:N)")
		}
	}
	if per == 0 {
		return nil
	}
	if per > math.MaxInt64/count {
		return fmt.Errorf("%d MB per %s times %d %s is more memory than any node has", per, what[:3], count, what)
	}
	s.MemoryMb = per * count
	return nil
}

// requestForm records which options gave the tasks, GPUs and memory, for
// the variables Slurm sets only after them (SLURM_NTASKS, ...). -n
// includes the task count --gpus-per-task gives (perTaskTasks). -G alone
// is split over the nodes (resolveGPUs), again on a new node count.
func (b *builder) requestForm() *phalanxv1.RequestForm {
	return &phalanxv1.RequestForm{
		Ntasks: b.ntasks > 0, NtasksPerNode: b.tasksPerNode > 0, GpusPerNode: b.gpusPerNodeSet, Gpus: b.total.set,
		MemPerCpuMb: b.memPerCPU, MemPerGpuMb: b.memPerGPU,
		GpusSplit: b.total.set && b.perNode == "" && !b.perTask.set, GpusPerTask: b.perTask.set,
	}
}
