package scheduler

import (
	"fmt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Feasible reports whether the job could ever run: whether its partition's
// registered nodes, whatever their state and whatever runs on them, include
// Nodes nodes that each have the requested GPU model, GPUs, CPUs and memory.
// It returns an error wrapping cluster.ErrNotFound for an unknown partition
// and cluster.ErrUnsatisfiable, with the limiting resource, otherwise.
func Feasible(s *Snapshot, j *cluster.Job) error {
	p := newPool(&Snapshot{Nodes: s.Nodes, Partitions: s.Partitions, Topology: s.Topology})
	part := p.parts[j.Partition]
	if part == nil {
		return fmt.Errorf("partition %q: %w", j.Partition, cluster.ErrNotFound)
	}
	return part.neverFits(requestOf(j))
}

// stage is one requirement in the order Feasible reports them.
type stage struct {
	ok   func(*cluster.Node) bool
	have func(count int, nodes []*cluster.Node) string // what the partition has
	want string                                        // what the job asks, per node
}

// neverFits reports, once per request shape, why the request can never fit
// the partition's nodes, or nil.
func (p *partition) neverFits(r request) error {
	err, ok := p.never[r]
	if !ok {
		err = whyNever(p, r)
		p.never[r] = err
	}
	return err
}

// whyNever applies the requirements one by one to the partition's nodes and
// reports the first that leaves fewer than the requested node count.
func whyNever(p *partition, r request) error {
	nodes := make([]*cluster.Node, len(p.members))
	for i, c := range p.members {
		nodes[i] = c.node
	}
	if len(nodes) < r.nodes {
		return fmt.Errorf("%w: partition %s has %s; the job asks for %s",
			cluster.ErrUnsatisfiable, p.Name, plural(len(nodes), "node"), plural(r.nodes, "node"))
	}
	for _, st := range stages(r) {
		kept := keep(nodes, st.ok)
		if len(kept) < r.nodes {
			return fmt.Errorf("%w: partition %s has %s; the job asks for %s with %s each",
				cluster.ErrUnsatisfiable, p.Name, st.have(len(nodes), nodes), plural(r.nodes, "node"), st.want)
		}
		nodes = kept
	}
	return nil
}

func stages(r request) []stage {
	var out []stage
	if r.gpuType != "" {
		out = append(out, stage{
			ok: r.modelOK,
			have: func(n int, nodes []*cluster.Node) string {
				return fmt.Sprintf("%s, %d of them with GPU model %q", plural(n, "node"), len(keep(nodes, r.modelOK)), r.gpuType)
			},
			want: fmt.Sprintf("GPU model %q", r.gpuType),
		})
	}
	out = append(out,
		limit(r.gpus > 0, "GPUs", int64(r.gpus), func(n *cluster.Node) int64 { return int64(n.GPUs) }),
		limit(r.cpus > 0, "CPUs", int64(r.cpus), func(n *cluster.Node) int64 { return int64(n.CPUs) }),
		limit(r.memoryMB > 0, "MB of memory", r.memoryMB, func(n *cluster.Node) int64 { return n.MemoryMB }))
	return out
}

// limit is a stage for a countable per-node resource; when the job does not
// ask for it, every node passes.
func limit(asked bool, unit string, want int64, has func(*cluster.Node) int64) stage {
	return stage{
		ok: func(n *cluster.Node) bool { return !asked || has(n) >= want },
		have: func(count int, nodes []*cluster.Node) string {
			most := int64(0)
			for _, n := range nodes {
				most = max(most, has(n))
			}
			enough := len(keep(nodes, func(n *cluster.Node) bool { return has(n) >= want }))
			if enough == 0 {
				return fmt.Sprintf("%s with at most %d %s", plural(count, "node"), most, unit)
			}
			return fmt.Sprintf("only %s with %d or more %s", plural(enough, "node"), want, unit)
		},
		want: fmt.Sprintf("%d %s", want, unit),
	}
}

func keep(nodes []*cluster.Node, ok func(*cluster.Node) bool) []*cluster.Node {
	var out []*cluster.Node
	for _, n := range nodes {
		if ok(n) {
			out = append(out, n)
		}
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
