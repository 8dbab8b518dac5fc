package topology

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// FuzzParse parses topology.conf text. A parse gives a tree or an error,
// never both, and the error is ErrInvalid on one line; a tree has levels
// that fit its switches (a leaf is 0, a parent one more than its highest
// child), every node path ends at a root, and Conf writes text that parses
// back to the same tree.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SwitchName=s0 Nodes=dev[0-5]\nSwitchName=s1 Nodes=dev[6-11]\nSwitchName=s3 Switches=s[0-1] LinkSpeed=100\n",
		"switchname=core Switches=spine[1-2]\nSwitchName=spine1 Switches=leaf1\nSwitchName=spine2 \\\n  Switches=leaf2\nSwitchName=leaf1 Nodes=a1\nSwitchName=leaf2 Nodes=a2\n",
		"BlockName=nvl1 Nodes=gpu[001-018]\nBlockName=nvl2 Nodes=gpu[019-036]\nBlockSizes=18,36\n",
		"SwitchName=a Switches=b\nSwitchName=b Switches=a\n", "SwitchName=a Switches=a\n", "SwitchName=a Nodes=n1\nSwitchName=b Nodes=n1\n",
		"SwitchName=x Switches=y\n", "SwitchName=s Nodes=n[1-999999999]\n", "BlockSizes=0\n", "Bogus=1\n", "SwitchName=s\\ LinkSpeed=1\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tree, err := Parse(strings.NewReader(text))
		if (tree == nil) == (err == nil) {
			t.Fatalf("Parse(%q) = %v, %v: want a tree or an error", text, tree, err)
		}
		if err != nil {
			// Every problem found, one line each, none empty: ErrInvalid.
			if !errors.Is(err, cluster.ErrInvalid) || slices.Contains(strings.Split(err.Error(), "\n"), "") {
				t.Fatalf("Parse(%q): %q is not a problem a line wrapping ErrInvalid", text, err)
			}
			return
		}
		checkLevels(t, text, tree)
		conf := tree.Conf()
		back, err := Parse(strings.NewReader(conf))
		if err != nil {
			t.Fatalf("Parse(%q) wrote %q, which does not parse: %v", text, conf, err)
		}
		if describe(back) != describe(tree) || !reflect.DeepEqual(back.Nodes(), tree.Nodes()) {
			t.Fatalf("Parse(%q) = %s\nwrote %q, read back as %s", text, describe(tree), conf, describe(back))
		}
	})
}

func checkLevels(t *testing.T, text string, tree *Tree) {
	t.Helper()
	for _, name := range tree.Switches() {
		s, _ := tree.Switch(name)
		want := 0
		for _, c := range s.Switches {
			child, ok := tree.Switch(c)
			if !ok || child.Parent != name {
				t.Fatalf("Parse(%q): switch %s lists %s, which is missing or has parent %q", text, name, c, child.Parent)
			}
			want = max(want, child.Level+1)
		}
		if s.Level != want {
			t.Fatalf("Parse(%q): switch %s at level %d, want %d", text, name, s.Level, want)
		}
	}
	for _, n := range tree.Nodes() {
		if path := tree.Path(n); len(path) > len(tree.Switches()) {
			t.Fatalf("Parse(%q): node %s has a path of %d switches among %d", text, n, len(path), len(tree.Switches()))
		}
	}
}
