package topology

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"pgregory.net/rapid"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// TestData runs the scripts in testdata. Commands:
//
//	parse                 input: topology.conf; prints the tree or the error
//	generate leaves=L nodes=N per-spine=S [prefix=P]   prints Conf()
//	path node=N           switches from N's leaf to the root (last tree)
//	under switch=S        nodes under S (last tree)
func TestData(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasPrefix(path, "testdata/fuzz/") {
			return // the corpora of the fuzz targets
		}
		var tree *Tree
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "parse":
				got, err := Parse(strings.NewReader(d.Input))
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				tree = got
				return describe(tree)
			case "generate":
				var leaves, nodes, perSpine int
				prefix := "gpu"
				d.ScanArgs(t, "leaves", &leaves)
				d.ScanArgs(t, "nodes", &nodes)
				d.ScanArgs(t, "per-spine", &perSpine)
				d.MaybeScanArgs(t, "prefix", &prefix)
				var names []string
				tree, names = Generate(leaves, nodes, perSpine, prefix)
				return fmt.Sprintf("%d nodes: %s\n%s", len(names), hostlist.Compress(names), tree.Conf())
			case "path":
				var node string
				d.ScanArgs(t, "node", &node)
				return fmt.Sprintf("%q\n", tree.Path(node))
			case "under":
				var sw string
				d.ScanArgs(t, "switch", &sw)
				return fmt.Sprintf("%q\n", tree.NodesUnder(sw))
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// describe prints every switch with its level and links, then blocks.
func describe(t *Tree) string {
	var b strings.Builder
	for _, name := range t.Switches() {
		s, _ := t.Switch(name)
		fmt.Fprintf(&b, "switch %s level=%d", s.Name, s.Level)
		if s.Parent != "" {
			fmt.Fprintf(&b, " parent=%s", s.Parent)
		}
		if len(s.Switches) > 0 {
			fmt.Fprintf(&b, " switches=%s", strings.Join(s.Switches, ","))
		}
		if len(s.Nodes) > 0 {
			fmt.Fprintf(&b, " nodes=%s", hostlist.Compress(s.Nodes))
		}
		b.WriteByte('\n')
	}
	if leaves := t.Leaves(); len(leaves) > 0 {
		fmt.Fprintf(&b, "leaves: %s\n", strings.Join(leaves, ","))
	}
	for _, bl := range t.Blocks() {
		fmt.Fprintf(&b, "block %s nodes=%s\n", bl.Name, hostlist.Compress(bl.Nodes))
	}
	if sizes := t.BlockSizes(); sizes != nil {
		fmt.Fprintf(&b, "block sizes: %v\n", sizes)
	}
	return b.String()
}

func TestNilTree(t *testing.T) {
	var tree *Tree
	if tree.LeafOf("gpu1") != "" || tree.BlockOf("gpu1") != "" || tree.Leaves() != nil ||
		tree.Path("gpu1") != nil || tree.NodesUnder("x") != nil || tree.Blocks() != nil ||
		tree.BlockSizes() != nil || tree.Nodes() != nil || tree.Parent("x") != "" || tree.Conf() != "" {
		t.Fatal("nil tree must answer as an empty one")
	}
	if _, ok := tree.Switch("x"); ok {
		t.Fatal("nil tree has a switch")
	}
}

func TestParseErrorsWrapInvalid(t *testing.T) {
	_, err := Parse(strings.NewReader("# ok\nSwitchName=s1 Nodes=a[1-\n"))
	if !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want ErrInvalid naming line 2", err)
	}
}

func TestLoad(t *testing.T) {
	if _, err := Load(t.TempDir() + "/missing.conf"); err == nil {
		t.Fatal("Load of a missing file: no error")
	}
}

func TestCopiesAreIndependent(t *testing.T) {
	tree, _ := Generate(2, 2, 2, "n")
	s, _ := tree.Switch("leaf1")
	s.Nodes[0] = "changed"
	if tree.NodesUnder("leaf1")[0] != "n0001" {
		t.Fatal("Switch returned the tree's own slice")
	}
}

// TestConfRoundTrip: Parse(Conf(t)) describes the same tree, for generated
// trees of every shape, with blocks added.
func TestConfRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		leaves := rapid.IntRange(0, 12).Draw(rt, "leaves")
		per := rapid.IntRange(1, 5).Draw(rt, "nodesPerLeaf")
		spine := rapid.IntRange(0, 5).Draw(rt, "leavesPerSpine")
		tree, names := Generate(leaves, per, spine, "gpu")
		if len(names) != leaves*per {
			rt.Fatalf("%d names, want %d", len(names), leaves*per)
		}
		for i, n := range names {
			if want := "leaf" + strconv.Itoa(i/per+1); tree.LeafOf(n) != want {
				rt.Fatalf("LeafOf(%s) = %q, want %q", n, tree.LeafOf(n), want)
			}
		}
		conf := tree.Conf()
		if k := rapid.IntRange(1, 4).Draw(rt, "block"); len(names) > 0 {
			conf += fmt.Sprintf("BlockName=b1 Nodes=%s\nBlockSizes=%d\n", hostlist.Compress(names[:min(k, len(names))]), k)
		}
		back, err := Parse(strings.NewReader(conf))
		if err != nil {
			rt.Fatalf("Parse(Conf()): %v\n%s", err, conf)
		}
		if again := back.Conf(); again != conf {
			rt.Fatalf("Conf changed on round trip:\n%s\nvs\n%s", conf, again)
		}
		if !reflect.DeepEqual(describeTree(tree), describeTree(back)) {
			rt.Fatalf("trees differ")
		}
		if len(names) > 0 && back.BlockOf(names[0]) != "b1" {
			rt.Fatalf("BlockOf(%s) = %q, want b1", names[0], back.BlockOf(names[0]))
		}
	})
}

func describeTree(t *Tree) map[string]Switch {
	out := map[string]Switch{}
	for _, n := range t.Switches() {
		out[n], _ = t.Switch(n)
	}
	return out
}

func TestWithBlocks(t *testing.T) {
	tree, names := Generate(2, 3, 0, "n")
	b := tree.WithBlocks(names, 4)
	if got := b.Blocks(); len(got) != 2 || len(got[0].Nodes) != 4 || len(got[1].Nodes) != 2 {
		t.Fatalf("blocks = %+v", got)
	}
	if b.BlockOf("n0005") != "block2" || tree.BlockOf("n0005") != "" || b.LeafOf("n0005") != "leaf2" {
		t.Fatalf("BlockOf = %q (original %q), leaf %q", b.BlockOf("n0005"), tree.BlockOf("n0005"), b.LeafOf("n0005"))
	}
	back, err := Parse(strings.NewReader(b.Conf()))
	if err != nil || back.Conf() != b.Conf() {
		t.Fatalf("round trip: %v\n%s\n%s", err, b.Conf(), back.Conf())
	}
}
