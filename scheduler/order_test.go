package scheduler

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/phalanx-hpc/phalanx/cluster"

	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// TestNumberedInOrderImpliesLess checks that the shortcut only answers true
// where hostlist.Less does, and that it does answer for plain numbered
// neighbours.
func TestNumberedInOrderImpliesLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"gpu0041", "gpu0042", true},
		{"gpu0099", "gpu0100", true},
		{"gpu0042", "gpu0041", false},
		{"gpu0042", "gpu0042", false},
		{"gpu9", "gpu10", false},                                  // widths differ: left to hostlist.Less
		{"a10c", "a1bc", false},                                   // hostlist.Less is false here
		{"n12345678901234567890", "n12345678901234567891", false}, // too wide to be a number
	} {
		if got := numberedInOrder(c.a, c.b); got != c.want {
			t.Errorf("numberedInOrder(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if c.want && !hostlist.Less(c.a, c.b) {
			t.Errorf("hostlist.Less(%q, %q) is false", c.a, c.b)
		}
	}
	name := rapid.StringMatching(`[a-c0-2]{0,3}[0-9]{0,22}[a-b]{0,1}`)
	rapid.Check(t, func(t *rapid.T) {
		a, b := name.Draw(t, "a"), name.Draw(t, "b")
		if numberedInOrder(a, b) && !hostlist.Less(a, b) {
			t.Fatalf("numberedInOrder(%q, %q) but not hostlist.Less", a, b)
		}
	})
}

// TestScheduleIgnoresRepeatedNodes checks that a node listed again after
// the others (so the list is not strictly in order) leaves the plan as it
// was: the first entry of a name counts.
func TestScheduleIgnoresRepeatedNodes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot(t, 8)
		want := Schedule(s, epoch)
		again := cloneSnapshot(s)
		dup := again.Nodes[rapid.IntRange(0, len(again.Nodes)-1).Draw(t, "dup")].Clone()
		dup.GPUs, dup.State = 0, cluster.NodeDown
		again.Nodes = append(again.Nodes, dup)
		if got := Schedule(again, epoch); !reflect.DeepEqual(got, want) {
			t.Fatalf("a repeated node changed the plan:\n got %+v\nwant %+v", got, want)
		}
	})
}
