package topology

import (
	"fmt"
	"slices"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// builder assembles a Tree from switch and block definitions and checks it.
// It records every problem it finds (errs) and goes on, so that one pass
// reports them all: a line with a problem still defines what it can (a
// switch whose LinkSpeed is wrong is still defined), so the lines after it
// are not blamed for it. Line numbers (0 when unknown) go into messages.
type builder struct {
	t        *Tree
	file     string         // named in messages; "" for none
	lineOf   map[string]int // switch or block name -> defining line
	parentAt map[string]int // child switch -> line that claimed it
	children []string       // child switches, in the order claimed
	expanded int            // names the file's host lists expanded to, in all
	stopped  bool           // too many names or problems: the rest is not read
	lastRead int            // the last line read, when stopped for problems
	errs     []error
}

func newBuilder(file string) *builder {
	return &builder{
		t: &Tree{
			switches: map[string]*Switch{},
			leafOf:   map[string]string{},
			blockOf:  map[string]string{},
		},
		file:     file,
		lineOf:   map[string]int{},
		parentAt: map[string]int{},
	}
}

// ParseError is one problem of a topology.conf: its file (when known),
// its line (0 for the whole file) and what is wrong. It is
// cluster.ErrInvalid, without those words in its text: a list of problems
// reads one line each.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return e.File + ": " + e.Msg
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Unwrap makes errors.Is(err, cluster.ErrInvalid) hold.
func (e *ParseError) Unwrap() error { return cluster.ErrInvalid }

// errorf records a problem at line.
func (b *builder) errorf(line int, format string, args ...any) {
	b.errs = append(b.errs, &ParseError{File: b.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// addSwitch defines a switch, unless its name is taken. Nodes already
// under another switch and child switches already claimed are problems,
// reported and left out.
func (b *builder) addSwitch(line int, name string, children, nodes []string) {
	if prev, dup := b.lineOf["switch "+name]; dup {
		b.errorf(line, "switch %q already defined on line %d", name, prev)
		return
	}
	b.lineOf["switch "+name] = line
	if slices.Contains(children, name) { // left out: no cycle to report as well
		b.errorf(line, "switch %q lists itself", name)
		children = slices.DeleteFunc(slices.Clone(children), func(c string) bool { return c == name })
	}
	s := &Switch{Name: name, Switches: b.claimChildren(line, children), Nodes: b.claimLeaves(line, name, nodes)}
	b.t.switches[name] = s
	b.t.order = append(b.t.order, name)
}

// claimLeaves puts nodes under switch name and returns them, less those
// already under a switch (reported: the first, and how many more).
func (b *builder) claimLeaves(line int, name string, nodes []string) []string {
	out := nodes[:0:0]
	var taken []string
	for _, n := range nodes {
		if _, ok := b.t.leafOf[n]; ok {
			taken = append(taken, n)
			continue
		}
		b.t.leafOf[n] = name
		out = append(out, n)
	}
	if len(taken) > 0 {
		b.errorf(line, "node %q is already under switch %q%s", taken[0], b.t.leafOf[taken[0]], andMore(len(taken)-1, "node"))
	}
	return out
}

// claimChildren records the switches a switch lists, less those already
// listed (reported: the first, and how many more).
func (b *builder) claimChildren(line int, children []string) []string {
	out := children[:0:0]
	var taken []string
	for _, c := range children {
		if _, ok := b.parentAt[c]; ok {
			taken = append(taken, c)
			continue
		}
		b.parentAt[c] = line
		b.children = append(b.children, c)
		out = append(out, c)
	}
	if len(taken) > 0 {
		b.errorf(line, "switch %q already has a parent%s", taken[0], andMore(len(taken)-1, "switch"))
	}
	return out
}

// andMore says " (and N more THINGs)", or nothing for none.
func andMore(n int, thing string) string {
	switch n {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (and 1 more %s)", thing)
	}
	return fmt.Sprintf(" (and %d more %s)", n, plural(thing))
}

func plural(s string) string {
	if strings.HasSuffix(s, "ch") {
		return s + "es"
	}
	return s + "s"
}

func (b *builder) addBlock(line int, name string, nodes []string) {
	if prev, dup := b.lineOf["block "+name]; dup {
		b.errorf(line, "block %q already defined on line %d", name, prev)
		return
	}
	b.lineOf["block "+name] = line
	members := nodes[:0:0]
	var taken []string
	for _, n := range nodes {
		if _, ok := b.t.blockOf[n]; ok {
			taken = append(taken, n)
			continue
		}
		b.t.blockOf[n] = name
		members = append(members, n)
	}
	if len(taken) > 0 {
		b.errorf(line, "node %q is already in block %q%s", taken[0], b.t.blockOf[taken[0]], andMore(len(taken)-1, "node"))
	}
	b.t.blocks = append(b.t.blocks, Block{Name: name, Nodes: members})
}

func (b *builder) setBlockSizes(line int, sizes []int) {
	if b.t.blockSizes != nil {
		b.errorf(line, "BlockSizes given twice")
		return
	}
	for i, s := range sizes {
		if s <= 0 {
			b.errorf(line, "block size %d is not positive", s)
			return
		}
		if i > 0 && s <= sizes[i-1] {
			b.errorf(line, "block sizes must increase (%d after %d)", s, sizes[i-1])
			return
		}
	}
	b.t.blockSizes = sizes
}

// finish makes the whole file's checks, recording what they find: every
// switch listed but not defined, every cycle. It links children to
// parents and computes levels.
func (b *builder) finish() {
	b.link()
	visiting, done := map[string]bool{}, map[string]bool{}
	for _, name := range b.t.order {
		if err := b.level(name, visiting, done); err != nil {
			b.errs = append(b.errs, err)
			for n := range visiting { // each cycle once
				done[n] = true
			}
			clear(visiting)
		}
	}
}

// link reports the child switches that are not defined and sets the
// parent of those that are.
func (b *builder) link() {
	for _, c := range b.children {
		if b.t.switches[c] == nil {
			b.errorf(b.parentAt[c], "switch %q is not defined", c)
		}
	}
	for _, name := range b.t.order {
		for _, c := range b.t.switches[name].Switches {
			if child := b.t.switches[c]; child != nil {
				child.Parent = name
			}
		}
	}
}

// level computes the switch's level and those below it, each once (done),
// failing on a cycle (a switch met again while visiting its descendants).
// Children that are not defined (reported by link) count for nothing.
func (b *builder) level(name string, visiting, done map[string]bool) error {
	if done[name] {
		return nil
	}
	if visiting[name] {
		return &ParseError{File: b.file, Line: b.lineOf["switch "+name], Msg: fmt.Sprintf("switch %q is its own ancestor", name)}
	}
	visiting[name] = true
	s := b.t.switches[name]
	s.Level = 0
	for _, c := range s.Switches {
		child := b.t.switches[c]
		if child == nil {
			continue
		}
		if err := b.level(c, visiting, done); err != nil {
			return err
		}
		s.Level = max(s.Level, child.Level+1)
	}
	delete(visiting, name)
	done[name] = true
	return nil
}
