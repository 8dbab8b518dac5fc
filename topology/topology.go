// Package topology models the network fabric of a cluster, as Slurm's
// topology.conf describes it, so the scheduler can keep a gang close.
//
// Two views are kept side by side:
//
//   - the switch tree (Slurm's topology/tree): nodes hang under leaf
//     switches, leaves under spines, to any depth. A switch that has nodes is
//     a leaf; a switch's level is 0 for leaves and one more than its highest
//     child otherwise. Jobs should span as few leaves as possible.
//   - blocks (Slurm's topology/block): NVLink domains, supernodes or other
//     groups of nodes with fast links inside, and the block sizes
//     (BlockSizes=) a job may be split into.
//
// A Tree is immutable once built (by Parse, Load or Generate) and safe for
// concurrent readers. Every query method also works on a nil *Tree, which
// stands for "no topology known": nodes have no leaf and no block.
package topology

import "sort"

// Switch is one switch of the tree.
type Switch struct {
	Name     string
	Parent   string   // empty for a root
	Switches []string // child switches, as listed
	Nodes    []string // nodes attached directly, as listed
	Level    int      // 0 for a leaf
}

// Block is one block of nodes (an NVLink domain, a supernode).
type Block struct {
	Name  string
	Nodes []string
}

// Tree is the fabric: switches, blocks and where each node sits.
type Tree struct {
	switches   map[string]*Switch
	order      []string // switch names in definition order
	leafOf     map[string]string
	blocks     []Block
	blockOf    map[string]string
	blockSizes []int
	lines      map[string]int // "switch NAME" or "block NAME" -> line read; nil when generated
}

// LeafOf returns the leaf switch the node is attached to, or "" if the node
// is not in the tree.
func (t *Tree) LeafOf(node string) string {
	if t == nil {
		return ""
	}
	return t.leafOf[node]
}

// Switch returns a copy of the named switch.
func (t *Tree) Switch(name string) (Switch, bool) {
	if t == nil || t.switches[name] == nil {
		return Switch{}, false
	}
	return copySwitch(t.switches[name]), true
}

func copySwitch(s *Switch) Switch {
	c := *s
	c.Switches = append([]string(nil), s.Switches...)
	c.Nodes = append([]string(nil), s.Nodes...)
	return c
}

// DefinedAt returns the line of the file read that defines the switch or
// block name (kind "switch" or "block"); 0 when not known, as in a
// generated tree.
func (t *Tree) DefinedAt(kind, name string) int {
	if t == nil {
		return 0
	}
	return t.lines[kind+" "+name]
}

// Switches returns every switch name in definition order.
func (t *Tree) Switches() []string {
	if t == nil {
		return nil
	}
	return append([]string(nil), t.order...)
}

// Leaves returns the names of the switches that have nodes, in definition
// order.
func (t *Tree) Leaves() []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, name := range t.order {
		if len(t.switches[name].Nodes) > 0 {
			out = append(out, name)
		}
	}
	return out
}

// Parent returns the switch above the named switch, or "" for a root or an
// unknown switch.
func (t *Tree) Parent(sw string) string {
	if t == nil || t.switches[sw] == nil {
		return ""
	}
	return t.switches[sw].Parent
}

// Path returns the switches from the node's leaf up to its root, or nil if
// the node is not in the tree.
func (t *Tree) Path(node string) []string {
	var out []string
	for sw := t.LeafOf(node); sw != ""; sw = t.Parent(sw) {
		out = append(out, sw)
	}
	return out
}

// NodesUnder returns every node below the switch: its own nodes, then its
// children's, depth first in the order listed.
func (t *Tree) NodesUnder(sw string) []string {
	if t == nil || t.switches[sw] == nil {
		return nil
	}
	s := t.switches[sw]
	out := append([]string(nil), s.Nodes...)
	for _, c := range s.Switches {
		out = append(out, t.NodesUnder(c)...)
	}
	return out
}

// Nodes returns every node in the tree or in a block, sorted.
func (t *Tree) Nodes() []string {
	if t == nil {
		return nil
	}
	seen := make(map[string]bool, len(t.leafOf)+len(t.blockOf))
	var out []string
	for _, m := range []map[string]string{t.leafOf, t.blockOf} {
		for n := range m {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Blocks returns the blocks in definition order.
func (t *Tree) Blocks() []Block {
	if t == nil {
		return nil
	}
	out := make([]Block, len(t.blocks))
	for i, b := range t.blocks {
		out[i] = Block{Name: b.Name, Nodes: append([]string(nil), b.Nodes...)}
	}
	return out
}

// BlockOf returns the block the node belongs to, or "".
func (t *Tree) BlockOf(node string) string {
	if t == nil {
		return ""
	}
	return t.blockOf[node]
}

// BlockSizes returns the configured block sizes (BlockSizes=), ascending;
// nil when none were configured.
func (t *Tree) BlockSizes() []int {
	if t == nil {
		return nil
	}
	return append([]int(nil), t.blockSizes...)
}
