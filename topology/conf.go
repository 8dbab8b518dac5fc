package topology

import (
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// Conf returns the tree as topology.conf text that Parse reads back to an
// equal tree, with names compressed into hostlist expressions where that
// keeps their order.
func (t *Tree) Conf() string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	for _, name := range t.order {
		s := t.switches[name]
		b.WriteString("SwitchName=" + name)
		if len(s.Switches) > 0 {
			b.WriteString(" Switches=" + names(s.Switches))
		}
		if len(s.Nodes) > 0 {
			b.WriteString(" Nodes=" + names(s.Nodes))
		}
		b.WriteByte('\n')
	}
	for _, bl := range t.blocks {
		b.WriteString("BlockName=" + bl.Name + " Nodes=" + names(bl.Nodes) + "\n")
	}
	if len(t.blockSizes) > 0 {
		sizes := make([]string, len(t.blockSizes))
		for i, s := range t.blockSizes {
			sizes[i] = strconv.Itoa(s)
		}
		b.WriteString("BlockSizes=" + strings.Join(sizes, ",") + "\n")
	}
	return b.String()
}

// names compresses a list when compressing preserves its order and
// contents, and otherwise writes it out with commas.
func names(list []string) string {
	c := hostlist.Compress(list)
	if back, err := hostlist.Expand(c); err == nil && equal(back, list) {
		return c
	}
	return strings.Join(list, ",")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
