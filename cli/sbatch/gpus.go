package sbatch

import (
	"fmt"
	"math"

	"github.com/phalanx-hpc/phalanx/cli/getopt"
)

// gpuRequest is a GPU count given per task (--gpus-per-task) or for the
// whole job (--gpus), before it becomes GPUs per node.
type gpuRequest struct {
	set bool
	typ string
	n   int32
}

// gpuOption is what one GPU option gives: its count and type ("": none),
// and the option as written.
type gpuOption struct {
	name, opt, typ string
	n              int32
}

// noteGPU records what GPU option v gives; a later value of the same
// option replaces it, as the value does.
func (b *builder) noteGPU(v getopt.Value, typ string, n int32) {
	o := gpuOption{name: v.Name, opt: "--" + v.Name + "=" + v.Value, typ: typ, n: n}
	for i := range b.gpuOpts {
		if b.gpuOpts[i].name == v.Name {
			b.gpuOpts[i] = o
			return
		}
	}
	b.gpuOpts = append(b.gpuOpts, o)
}

// dropZeroGPUs forgets the GPU options that ask for 0 when another asks
// for some, as Slurm's sbatch reads an explicit 0 as not given: a site's
// "#SBATCH --gres=gpu:0" default with --gpus-per-node=4 on the command
// line, or a wrapper's --gpus=${N:-0}, asks for what the other option
// says. A 0 alone (or beside other 0s) stays: the job asked for none.
func (b *builder) dropZeroGPUs() {
	some := false
	for _, o := range b.gpuOpts {
		some = some || o.n > 0
	}
	if !some {
		return
	}
	kept := b.gpuOpts[:0]
	for _, o := range b.gpuOpts {
		if o.n > 0 {
			kept = append(kept, o)
			continue
		}
		switch o.name {
		case "gpus":
			b.total = gpuRequest{}
		case "gpus-per-task":
			b.perTask = gpuRequest{}
		}
	}
	b.gpuOpts = kept
	s := b.spec
	s.GpuType, s.GpusPerNode, b.perNode, b.gpusPerNodeSet = "", 0, "", false
	for _, o := range kept { // the per-node count left, if any (checkGPUOptions: one)
		if o.name == "gpus-per-node" || o.name == "gres" {
			s.GpuType, s.GpusPerNode, b.perNode = o.typ, o.n, o.opt
			b.gpusPerNodeSet = b.gpusPerNodeSet || o.name == "gpus-per-node"
		}
	}
}

// checkGPUOptions refuses GPU options that give a type beside ones that
// do not, as Slurm's sbatch does ("Invalid GRES specification (with and
// without type identification)"), and ones that give different types: a
// Phalanx job's GPUs are of one type. So the job's type is every GPU
// option's, and its variables (SLURM_GPUS_PER_TASK=a100:1) carry it as
// Slurm's do. --gpus-per-node and --gres=gpu, which both give the GPUs
// per node, must give the same count (the later one was taken, and
// SLURM_GPUS_PER_NODE said its count).
func (b *builder) checkGPUOptions() error {
	if len(b.gpuOpts) == 0 {
		return nil
	}
	first := b.gpuOpts[0]
	for _, o := range b.gpuOpts[1:] {
		switch {
		case first.typ == o.typ:
		case first.typ == "" || o.typ == "":
			typed, untyped := first, o
			if typed.typ == "" {
				typed, untyped = o, first
			}
			return fmt.Errorf("%s gives a GPU type and %s does not: give the type in both, or in neither", typed.opt, untyped.opt)
		default:
			return fmt.Errorf("%s and %s ask for different GPU types: a job's GPUs are all of one type", first.opt, o.opt)
		}
	}
	var perNode []gpuOption
	for _, o := range b.gpuOpts {
		if o.name == "gpus-per-node" || o.name == "gres" {
			perNode = append(perNode, o)
		}
	}
	if len(perNode) == 2 && perNode[0].n != perNode[1].n {
		return fmt.Errorf("%s and %s ask for different GPUs per node: give one of them", perNode[0].opt, perNode[1].opt)
	}
	return nil
}

// checkTotal checks --gpus against the job's other GPU options as Slurm's
// sbatch does, before resolveTasks, so that the GPUs the job holds are the
// total it asked (SLURM_GPUS). With --gpus-per-node or --gres=gpu, --gpus
// is a number of nodes of them: -N, or the node count when -N is not
// given. With --gpus-per-task, a number of tasks (tasksOfTotal). Slurm
// refuses the same requests ("Invalid generic resource (gres)
// specification"). A 0 beside a count that is not was dropped before
// (dropZeroGPUs).
func (b *builder) checkTotal() error {
	if !b.total.set {
		return nil
	}
	s, total, gpus := b.spec, b.total.n, b.written("gpus")
	if b.perNode != "" {
		per := s.GpusPerNode
		switch {
		case per == 0 || total == 0:
			if per != total {
				return fmt.Errorf("%s and %s disagree (0 asks for no GPUs): give one of them", gpus, b.perNode)
			}
		case total%per != 0:
			return fmt.Errorf("%s is not a multiple of %s: give a multiple of it, or one of them", gpus, b.perNode)
		case !b.nodesSet:
			s.Nodes, b.nodesSet = total/per, true // as Slurm's: the nodes --gpus needs
			b.nodesFrom = gpus + " with " + b.perNode
		case total/per != s.Nodes:
			return fmt.Errorf("%s is %d nodes of %s, but -N asks for %d: give -N %d, or --gpus=%s",
				gpus, total/per, b.perNode, s.Nodes, total/per, typed(b.total.typ, int64(per)*int64(s.Nodes)))
		}
	}
	if b.perTask.set {
		return b.tasksOfTotal()
	}
	return nil
}

// tasksOfTotal checks --gpus against --gpus-per-task: it is a number of
// tasks, which must be the job's (-n, or its nodes times
// --ntasks-per-node, one a node by default), or is its -n when it gives no
// task or node count, as Slurm's sbatch reads them. Either way the job
// then has a task count, as in Slurm (SLURM_NTASKS).
func (b *builder) tasksOfTotal() error {
	s, total, per := b.spec, b.total.n, b.perTask.n
	gpus, perTask := b.written("gpus"), b.written("gpus-per-task")
	switch {
	case per == 0 || total == 0:
		if per != total {
			return fmt.Errorf("%s and %s disagree (0 asks for no GPUs): give one of them", gpus, perTask)
		}
		return nil
	case total%per != 0:
		return fmt.Errorf("%s is not a multiple of %s: give a multiple of it, or one of them", gpus, perTask)
	}
	tasks := total / per
	if b.ntasks == 0 && !b.nodesSet && b.tasksPerNode == 0 {
		b.ntasks = tasks
		return nil
	}
	have, from := int64(b.ntasks), "-n"
	if b.ntasks == 0 {
		t := max(b.tasksPerNode, 1)
		have, from = int64(s.Nodes)*int64(t), fmt.Sprintf("%d per node on %s", t, plural(int64(s.Nodes), "node"))
	}
	if have != int64(tasks) {
		return fmt.Errorf("%s with %s is %d tasks, but the job has %d (%s): give -n %d, or --gpus=%s",
			gpus, perTask, tasks, have, from, tasks, typed(b.total.typ, have*int64(per)))
	}
	b.ntasks = tasks
	return nil
}

// perTaskTasks gives a job that asks GPUs per task, and no -n, its task
// count: its nodes times --ntasks-per-node (one a node by default), as
// Slurm's sbatch counts them for --gpus-per-task, which sets SLURM_NTASKS
// then. After checkTotal, before resolveTasks.
func (b *builder) perTaskTasks() {
	if !b.perTask.set || b.ntasks > 0 {
		return
	}
	if n := int64(b.spec.Nodes) * int64(max(b.tasksPerNode, 1)); n <= math.MaxInt32 {
		b.ntasks = int32(n)
	}
}

// written is GPU option name as it was given (--gpus=a100:16).
func (b *builder) written(name string) string {
	for _, o := range b.gpuOpts {
		if o.name == name {
			return o.opt
		}
	}
	return "--" + name
}

// typed writes a GPU count as the options take it: N, or TYPE:N.
func typed(typ string, n int64) string {
	if typ == "" {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%s:%d", typ, n)
}

// plural writes n things: "1 node", "2 nodes".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// resolveGPUs turns --gpus-per-task and --gpus into GPUs per node, the one
// shape a Phalanx gang has. --gres and --gpus-per-node say it directly and
// win (checkTotal has checked --gpus against them); --gpus-per-task counts
// --ntasks-per-node tasks (default 1) on each node; --gpus must split
// evenly over the nodes. --gpus-per-task is also kept as the tasks' share
// of the node's GPUs (the controller checks it against --gpus-per-node
// when both are given). Runs after resolveTasks.
func (b *builder) resolveGPUs() error {
	s := b.spec
	if b.perTask.set {
		s.GpusPerTask = b.perTask.n
	}
	if b.perNode != "" {
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
