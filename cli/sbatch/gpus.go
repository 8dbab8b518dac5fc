package sbatch

import (
	"fmt"
	"math"
)

// gpuRequest is a GPU count given per task (--gpus-per-task) or for the
// whole job (--gpus), before it becomes GPUs per node.
type gpuRequest struct {
	set bool
	typ string
	n   int32
}

// resolveGPUs turns --gpus-per-task and --gpus into GPUs per node, the one
// shape a Phalanx gang has. --gres and --gpus-per-node say it directly and
// win; --gpus-per-task counts --ntasks-per-node tasks (default 1) on each
// node; --gpus must split evenly over the nodes. --gpus-per-task is also
// kept as the tasks' share of the node's GPUs (the controller checks it
// against --gpus-per-node when both are given). Runs after resolveTasks.
func (b *builder) resolveGPUs() error {
	s := b.spec
	if b.perTask.set {
		s.GpusPerTask = b.perTask.n
	}
	if s.GpusPerNode > 0 {
		return nil
	}
	switch {
	case b.perTask.set:
		tasks := max(s.TasksPerNode, 1)
		if n := int64(b.perTask.n) * int64(tasks); n > math.MaxInt32 {
			return fmt.Errorf("--gpus-per-task=%d with --ntasks-per-node=%d is %d GPUs per node, more than any node has: ask for fewer", b.perTask.n, tasks, n)
		}
		s.GpuType, s.GpusPerNode = b.perTask.typ, b.perTask.n*tasks
	case b.total.set:
		if b.total.n%s.Nodes != 0 {
			return fmt.Errorf("--gpus=%d does not split evenly over %d nodes: ask for a multiple of -N, or use --gpus-per-node", b.total.n, s.Nodes)
		}
		s.GpuType, s.GpusPerNode = b.total.typ, b.total.n/s.Nodes
	}
	return nil
}
