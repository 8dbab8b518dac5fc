package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// writeFiles writes name → text files into a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The problems of slurm.conf, gres.conf and topology.conf come in one
// run, a line each naming its file and line, in order: each file's
// one-line problems and its problems across lines (a second default
// partition, a partition named twice, undeclared nodes; a switch defined
// twice, or listed and not defined), without ": invalid request".
func TestLoadWithTopologyOnePass(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"slurm.conf": `ClusterName=c
GresTypes=gpu
NodeName=n[1-2] CPUs=x Gres=gpu:2
NodeName=n3 CPUs=4 Gres=gpu:2
PartitionName=a Nodes=n[1-2] Default=YES
PartitionName=b Nodes=n3,n9 Default=YES
PartitionName=a Nodes=n1
TopologyPlugin=topology/tree
`,
		"gres.conf": "NodeName=n1 Name=gpu Count=2\nNodeName=n3 Name=gpu Count=3\nNodeName=n8 Name=gpu Count=1\n",
		"topology.conf": `SwitchName=s1 Nodes=n[1-2] Foo=1
SwitchName=s1 Nodes=n3
SwitchName=s2 Switches=s9 LinkSpeed=abc
`,
	})
	conf, gres, topo := filepath.Join(dir, "slurm.conf"), filepath.Join(dir, "gres.conf"), filepath.Join(dir, "topology.conf")
	c, tree, err := LoadWithTopology(conf, "")
	if c != nil || tree != nil || !errors.Is(err, cluster.ErrInvalid) {
		t.Fatalf("LoadWithTopology = %v, %v, %v; want ErrInvalid", c, tree, err)
	}
	want := []string{
		conf + ":3: CPUs=x: want a whole number, e.g. CPUs=64",
		conf + ":6: partition b is Default=YES, and so is a (" + conf + ":5): keep one default",
		conf + ":6: partition b names node n9, which no NodeName line declares: declare it (NodeName=n9 ...) or take it out of the partition",
		conf + ":7: partition a is already defined at " + conf + ":5: define each partition once",
		gres + ":2: node n3 has Gres=gpu:3 here, but its NodeName line says Gres=gpu:2: make them agree",
		gres + ":3: node n8 has no NodeName line in the config: declare it there (with Gres=gpu:...)",
		topo + `:1: unknown key "foo" (allowed here: switchname, switches, nodes, linkspeed)`,
		topo + `:2: switch "s1" already defined on line 1`,
		topo + `:3: LinkSpeed "abc" is not a number`,
		topo + `:3: switch "s9" is not defined`,
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("LoadWithTopology:\n%s\nwant\n%s", err, strings.Join(want, "\n"))
	}
	// Load alone: the config's and gres.conf's.
	if _, err := Load(conf); err == nil || strings.Count(err.Error(), "\n") != 5 || strings.Contains(err.Error(), "topology.conf") {
		t.Errorf("Load:\n%v\nwant the 6 problems of slurm.conf and gres.conf", err)
	}
}

// LoadWithTopology returns the tree of a good config: the one the config
// names, or the one given.
func TestLoadWithTopology(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"slurm.conf":    "TopologyPlugin=topology/tree\nPartitionName=p Nodes=ALL\n",
		"topology.conf": "SwitchName=s1 Nodes=n[1-2]\n",
		"other.conf":    "SwitchName=s2 Nodes=n[1-2]\n",
		"flat.conf":     "PartitionName=p Nodes=ALL\n",
	})
	for _, tc := range []struct{ conf, topo, leaf string }{
		{"slurm.conf", "", "s1"},
		{"slurm.conf", "other.conf", "s2"},
		{"flat.conf", "", ""},
	} {
		topo := tc.topo
		if topo != "" {
			topo = filepath.Join(dir, topo)
		}
		c, tree, err := LoadWithTopology(filepath.Join(dir, tc.conf), topo)
		if err != nil || c == nil || tree.LeafOf("n1") != tc.leaf || (tc.leaf == "") != (tree == nil) {
			t.Errorf("%s, topology %q: %v, %v, %v; want leaf %q", tc.conf, tc.topo, c, tree, err, tc.leaf)
		}
	}
}

// A topology.conf beside a config without TopologyPlugin is not read, as
// in Slurm, and is warned about; TopologyPlugin=topology/flat says so.
func TestLoadWithTopologyUnread(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"slurm.conf":    "PartitionName=p Nodes=ALL\n",
		"flat.conf":     "TopologyPlugin=topology/flat\nPartitionName=p Nodes=ALL\n",
		"topology.conf": "SwitchName=s1 Nodes=n[1-2]\n",
	})
	want := filepath.Join(dir, "topology.conf") + ": not read: the config sets no TopologyPlugin"
	for conf, warned := range map[string]bool{"slurm.conf": true, "flat.conf": false} {
		c, tree, err := LoadWithTopology(filepath.Join(dir, conf), "")
		if err != nil || tree != nil {
			t.Fatalf("%s: %v, tree %v; want no error and no tree", conf, err, tree)
		}
		got := slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.HasPrefix(w, want) })
		if got != warned {
			t.Errorf("%s: warnings %q; want one starting %q: %v", conf, c.Warnings, want, warned)
		}
	}
}

// A topology.conf the config names and that is not there is an error
// naming the config's line, and still fs.ErrNotExist.
func TestLoadWithTopologyMissing(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plugin.conf": "ClusterName=c\nTopologyPlugin=topology/tree\n",
		"file.conf":   "TopologyFile=net/topo.conf\n",
	})
	for name, want := range map[string]string{
		"plugin.conf": filepath.Join(dir, "plugin.conf") + ":2: TopologyPlugin=topology/tree reads topology.conf beside " + filepath.Join(dir, "plugin.conf"),
		"file.conf":   filepath.Join(dir, "file.conf") + ":1: TopologyFile=net/topo.conf: open " + filepath.Join(dir, "net/topo.conf"),
	} {
		_, _, err := LoadWithTopology(filepath.Join(dir, name), "")
		if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v; want ErrNotExist, starting %q", name, err, want)
		}
	}
	if _, _, err := LoadWithTopology(filepath.Join(dir, "absent.conf"), ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a config that is not there: %v; want ErrNotExist", err)
	}
}

// gres.conf does not blame a node whose NodeName line has a problem of
// its own (it is declared; its line's error says what is wrong), nor any
// node when a NodeName line's names cannot be read.
func TestGresConfAfterBadNodeLine(t *testing.T) {
	for conf, want := range map[string]string{
		"GresTypes=gpu\nNodeName=n1 CPUs=x Gres=gpu:2\n": "slurm.conf:2: CPUs=x",
		"GresTypes=gpu\nNodeName=n[1- Gres=gpu:2\n":      "slurm.conf:2: NodeName: hostlist",
	} {
		dir := writeFiles(t, map[string]string{"slurm.conf": conf, "gres.conf": "NodeName=n1 Name=gpu Count=2\n"})
		_, err := Load(filepath.Join(dir, "slurm.conf"))
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want only %q", conf, err, want)
		}
	}
}

// A topology.conf that lists a node no NodeName line declares is refused,
// a line for each switch or block that does, naming the file and line, as
// Slurm refuses it: the node meant would be in no switch. Declared nodes
// that no switch reaches are a warning, as in Slurm.
func TestLoadWithTopologyUndeclaredNodes(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"slurm.conf": "TopologyPlugin=topology/tree\nNodeName=n[1-4] CPUs=8\nPartitionName=p Nodes=ALL\n",
		"typo.conf":  "SwitchName=s1 Nodes=n[01-02]\nSwitchName=s2 Nodes=n3\nSwitchName=top Switches=s[1-2]\nBlockName=b1 Nodes=n[3-5]\n",
		"short.conf": "SwitchName=s1 Nodes=n[1-2]\n",
	})
	conf, typo := filepath.Join(dir, "slurm.conf"), filepath.Join(dir, "typo.conf")
	_, _, err := LoadWithTopology(conf, typo)
	want := []string{
		typo + ":1: switch s1 lists n[01-02], which no NodeName line of " + conf + " declares: correct the name, or declare the node there",
		typo + ":4: block b1 lists n5, which no NodeName line of " + conf + " declares: correct the name, or declare the node there",
	}
	if err == nil || !slices.Equal(strings.Split(err.Error(), "\n"), want) {
		t.Errorf("LoadWithTopology:\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	c, tree, err := LoadWithTopology(conf, filepath.Join(dir, "short.conf"))
	if err != nil || tree == nil {
		t.Fatalf("LoadWithTopology(short.conf) = %v", err)
	}
	warn := filepath.Join(dir, "short.conf") + ": switches lack access to 2 nodes: n[3-4]"
	if len(c.Warnings) != 1 || !strings.HasPrefix(c.Warnings[0], warn) {
		t.Errorf("warnings %q; want one starting %q", c.Warnings, warn)
	}
}
