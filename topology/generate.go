package topology

import "fmt"

// Generate builds a regular two- or three-level tree for tests, benchmarks
// and development clusters: leaves leaf switches (leaf1, leaf2, …) with
// nodesPerLeaf nodes each, named prefix plus a four-digit number from 1
// (gpu0001, gpu0002, …), grouped leavesPerSpine to a spine (spine1, …). With
// more than one spine, a root switch "core" joins them. It returns the tree
// and the node names in order. Non-positive sizes give an empty tree;
// leavesPerSpine <= 0 puts every leaf under one spine.
func Generate(leaves, nodesPerLeaf, leavesPerSpine int, prefix string) (*Tree, []string) {
	b := newBuilder("")
	if leaves <= 0 || nodesPerLeaf <= 0 {
		return b.t, nil
	}
	if leavesPerSpine <= 0 || leavesPerSpine > leaves {
		leavesPerSpine = leaves
	}
	var all, spines []string
	var leafNames []string
	for l := 1; l <= leaves; l++ {
		nodes := make([]string, nodesPerLeaf)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("%s%04d", prefix, (l-1)*nodesPerLeaf+i+1)
		}
		all = append(all, nodes...)
		name := fmt.Sprintf("leaf%d", l)
		b.addSwitch(0, name, nil, nodes)
		leafNames = append(leafNames, name)
	}
	for s := 0; s*leavesPerSpine < leaves; s++ {
		end := min((s+1)*leavesPerSpine, leaves)
		name := fmt.Sprintf("spine%d", s+1)
		b.addSwitch(0, name, leafNames[s*leavesPerSpine:end], nil)
		spines = append(spines, name)
	}
	if len(spines) > 1 {
		b.addSwitch(0, "core", spines, nil)
	}
	b.finish()
	if len(b.errs) > 0 { // generated names cannot cause one
		panic("topology.Generate: " + b.errs[0].Error())
	}
	return b.t, all
}

// WithBlocks returns a copy of the tree with the given nodes cut, in order,
// into blocks of size nodes (block1, block2, …; the last may be smaller)
// and BlockSizes=size, replacing any blocks it had. size <= 0 returns the
// tree unchanged.
func (t *Tree) WithBlocks(nodes []string, size int) *Tree {
	if t == nil || size <= 0 {
		return t
	}
	c := *t
	c.blocks, c.blockOf, c.blockSizes = nil, make(map[string]string, len(nodes)), []int{size}
	for start := 0; start < len(nodes); start += size {
		name := fmt.Sprintf("block%d", start/size+1)
		members := append([]string(nil), nodes[start:min(start+size, len(nodes))]...)
		c.blocks = append(c.blocks, Block{Name: name, Nodes: members})
		for _, n := range members {
			c.blockOf[n] = name
		}
	}
	return &c
}
