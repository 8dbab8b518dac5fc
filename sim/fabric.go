package sim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology"
)

// FabricOptions describes a generated fabric.
type FabricOptions struct {
	Nodes     int // node count; the last leaf and block may be partial
	LeafSize  int // nodes per leaf switch
	SpineSize int // leaves per spine; more than one spine adds a "core" root
	BlockSize int // nodes per block (BlockName=); 0: no blocks
}

// GenerateTopology builds the topology.conf text of a regular fabric and
// parses it: nodes gpu00001… (zero-padded to at least four digits) under
// leaves leaf1… of LeafSize nodes, leaves under spines spine1… of SpineSize,
// and, with BlockSize > 0, blocks block1… of BlockSize consecutive nodes.
func GenerateTopology(o FabricOptions) (*topology.Tree, error) {
	if o.Nodes < 1 || o.LeafSize < 1 || o.SpineSize < 1 || o.BlockSize < 0 {
		return nil, cluster.Errorf(cluster.ErrInvalid, "fabric of %d nodes, leaves of %d, spines of %d leaves, blocks of %d: sizes must be positive",
			o.Nodes, o.LeafSize, o.SpineSize, o.BlockSize)
	}
	width := max(4, len(fmt.Sprint(o.Nodes)))
	rangeOf := func(from, to int) string { // 1-based, inclusive
		return fmt.Sprintf("gpu[%0*d-%0*d]", width, from, width, to)
	}
	var b strings.Builder
	leaves := (o.Nodes + o.LeafSize - 1) / o.LeafSize
	for l := 0; l < leaves; l++ {
		fmt.Fprintf(&b, "SwitchName=leaf%d Nodes=%s\n", l+1, rangeOf(l*o.LeafSize+1, min((l+1)*o.LeafSize, o.Nodes)))
	}
	spines := (leaves + o.SpineSize - 1) / o.SpineSize
	for s := 0; s < spines; s++ {
		fmt.Fprintf(&b, "SwitchName=spine%d Switches=leaf[%d-%d]\n", s+1, s*o.SpineSize+1, min((s+1)*o.SpineSize, leaves))
	}
	if spines > 1 {
		fmt.Fprintf(&b, "SwitchName=core Switches=spine[1-%d]\n", spines)
	}
	if o.BlockSize > 0 {
		for k := 0; k*o.BlockSize < o.Nodes; k++ {
			fmt.Fprintf(&b, "BlockName=block%d Nodes=%s\n", k+1, rangeOf(k*o.BlockSize+1, min((k+1)*o.BlockSize, o.Nodes)))
		}
		fmt.Fprintf(&b, "BlockSizes=%d\n", o.BlockSize)
	}
	return topology.Parse(strings.NewReader(b.String()))
}

// NodeShape is what every simulated node has.
type NodeShape struct {
	GPUs     int
	CPUs     int
	MemoryMB int64
}

// DefaultNodeShape is an 8-GPU training host.
var DefaultNodeShape = NodeShape{GPUs: 8, CPUs: 128, MemoryMB: 1 << 20}

// MakeNodes returns one UP node per node of the tree, in name order, each
// with the given shape and its leaf switch.
func MakeNodes(t *topology.Tree, shape NodeShape) []*cluster.Node {
	names := t.Nodes()
	out := make([]*cluster.Node, len(names))
	for i, n := range names {
		out[i] = &cluster.Node{Name: n, GPUs: shape.GPUs, CPUs: shape.CPUs, MemoryMB: shape.MemoryMB,
			GPUModel: "SIM-GPU", Leaf: t.LeafOf(n), State: cluster.NodeUp}
	}
	return out
}

// leafCapacity answers "how few leaves can hold n nodes": the leaves'
// node counts, largest first, as running sums.
type leafCapacity []int

func newLeafCapacity(nodes []*cluster.Node) leafCapacity {
	count := map[string]int{}
	var leaves []string
	for _, n := range nodes {
		if count[n.Leaf] == 0 {
			leaves = append(leaves, n.Leaf)
		}
		count[n.Leaf]++
	}
	sizes := make([]int, len(leaves))
	for i, l := range leaves {
		sizes[i] = count[l]
	}
	sort.Sort(sort.Reverse(sort.IntSlice(sizes)))
	for i := 1; i < len(sizes); i++ {
		sizes[i] += sizes[i-1]
	}
	return sizes
}

// minLeaves is the fewest leaves whose nodes add up to n (ceil(n / leaf
// size) on a regular fabric).
func (c leafCapacity) minLeaves(n int) int {
	return sort.SearchInts(c, n) + 1
}
