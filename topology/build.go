package topology

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// builder assembles a Tree from switch and block definitions and checks it.
// line numbers (0 when unknown) go into error messages.
type builder struct {
	t        *Tree
	lineOf   map[string]int // switch or block name -> defining line
	parentAt map[string]int // child switch -> line that claimed it
}

func newBuilder() *builder {
	return &builder{
		t: &Tree{
			switches: map[string]*Switch{},
			leafOf:   map[string]string{},
			blockOf:  map[string]string{},
		},
		lineOf:   map[string]int{},
		parentAt: map[string]int{},
	}
}

// invalid is a problem of the file: it says what, and is cluster.ErrInvalid
// (without the words "invalid request" in every line of a list).
type invalid struct{ msg string }

func (e invalid) Error() string { return e.msg }
func (e invalid) Unwrap() error { return cluster.ErrInvalid }

func lineErr(line int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		return invalid{fmt.Sprintf("line %d: %s", line, msg)}
	}
	return invalid{msg}
}

func (b *builder) addSwitch(line int, name string, children, nodes []string) error {
	if _, dup := b.t.switches[name]; dup {
		return lineErr(line, "switch %q already defined on line %d", name, b.lineOf["switch "+name])
	}
	if slices.Contains(children, name) { // before it is recorded: no cycle to report as well
		return lineErr(line, "switch %q lists itself", name)
	}
	b.lineOf["switch "+name] = line
	s := &Switch{Name: name, Switches: children, Nodes: nodes}
	b.t.switches[name] = s
	b.t.order = append(b.t.order, name)
	for _, n := range nodes {
		if other, ok := b.t.leafOf[n]; ok {
			return lineErr(line, "node %q is already under switch %q", n, other)
		}
		b.t.leafOf[n] = name
	}
	for _, c := range children {
		if _, ok := b.parentAt[c]; ok {
			return lineErr(line, "switch %q already has a parent", c)
		}
		if c == name {
			return lineErr(line, "switch %q lists itself", name)
		}
		b.parentAt[c] = line
	}
	return nil
}

func (b *builder) addBlock(line int, name string, nodes []string) error {
	if _, dup := b.lineOf["block "+name]; dup {
		return lineErr(line, "block %q already defined on line %d", name, b.lineOf["block "+name])
	}
	b.lineOf["block "+name] = line
	for _, n := range nodes {
		if other, ok := b.t.blockOf[n]; ok {
			return lineErr(line, "node %q is already in block %q", n, other)
		}
		b.t.blockOf[n] = name
	}
	b.t.blocks = append(b.t.blocks, Block{Name: name, Nodes: nodes})
	return nil
}

func (b *builder) setBlockSizes(line int, sizes []int) error {
	if b.t.blockSizes != nil {
		return lineErr(line, "BlockSizes given twice")
	}
	for i, s := range sizes {
		if s <= 0 {
			return lineErr(line, "block size %d is not positive", s)
		}
		if i > 0 && s <= sizes[i-1] {
			return lineErr(line, "block sizes must increase (%d after %d)", s, sizes[i-1])
		}
	}
	b.t.blockSizes = sizes
	return nil
}

// finish links children to parents, checks the tree has no dangling
// references or cycles, computes levels and returns the Tree.
func (b *builder) finish() (*Tree, error) {
	if err := b.link(); err != nil {
		return nil, err
	}
	visiting, done := map[string]bool{}, map[string]bool{}
	for _, name := range b.t.order {
		if err := b.level(name, visiting, done); err != nil {
			return nil, err
		}
	}
	return b.t, nil
}

func (b *builder) link() error {
	children := make([]string, 0, len(b.parentAt))
	for c := range b.parentAt {
		children = append(children, c)
	}
	sort.Slice(children, func(i, j int) bool { return b.parentAt[children[i]] < b.parentAt[children[j]] })
	var errs []error
	for _, c := range children {
		if b.t.switches[c] == nil {
			errs = append(errs, lineErr(b.parentAt[c], "switch %q is not defined", c))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, name := range b.t.order {
		for _, c := range b.t.switches[name].Switches {
			b.t.switches[c].Parent = name
		}
	}
	return nil
}

// level computes the switch's level and those below it, each once (done),
// failing on a cycle (a switch met again while visiting its descendants).
func (b *builder) level(name string, visiting, done map[string]bool) error {
	if done[name] {
		return nil
	}
	if visiting[name] {
		return lineErr(b.lineOf["switch "+name], "switch %q is its own ancestor", name)
	}
	visiting[name] = true
	s := b.t.switches[name]
	s.Level = 0
	for _, c := range s.Switches {
		if err := b.level(c, visiting, done); err != nil {
			return err
		}
		if l := b.t.switches[c].Level + 1; l > s.Level {
			s.Level = l
		}
	}
	delete(visiting, name)
	done[name] = true
	return nil
}
