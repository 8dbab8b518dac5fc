package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/phalanx-hpc/phalanx/topology"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// TopologyPath is the topology.conf the config names, as Slurm finds it:
// TopologyFile (relative to the directory of confPath, the main config
// file), else, with TopologyPlugin=topology/tree or topology/block,
// topology.conf beside the main config file; "" when the config has no
// topology (flat).
func (c *Config) TopologyPath(confPath string) string {
	switch {
	case c.TopologyFile != "" && filepath.IsAbs(c.TopologyFile):
		return c.TopologyFile
	case c.TopologyFile != "":
		return filepath.Join(filepath.Dir(confPath), c.TopologyFile)
	}
	switch strings.ToLower(c.TopologyPlugin) {
	case "topology/tree", "topology/block":
		return filepath.Join(filepath.Dir(confPath), "topology.conf")
	}
	return ""
}

// checkTopologyNodes refuses a topology.conf that puts a node no NodeName
// line declares under a switch or in a block, as Slurm does ("Invalid
// node name ... in switch config"): the controllers take no such node, so
// it is a misspelling, and the node meant would sit in no switch. It warns,
// as Slurm does, about declared nodes that no switch reaches: placement
// takes each for a leaf of its own. Without NodeName lines nodes join as
// they register, and nothing is checked.
func (p *parser) checkTopologyNodes(confPath, file string, t *topology.Tree) []error {
	if t == nil || !p.nodeLines || p.unresolved {
		return nil
	}
	var errs []error
	for _, name := range t.Switches() {
		sw, _ := t.Switch(name)
		errs = append(errs, p.undeclaredIn(confPath, file, t.DefinedAt("switch", name), "switch "+name, sw.Nodes)...)
	}
	for _, b := range t.Blocks() {
		errs = append(errs, p.undeclaredIn(confPath, file, t.DefinedAt("block", b.Name), "block "+b.Name, b.Nodes)...)
	}
	p.warnUnswitched(file, t)
	return errs
}

// undeclaredIn returns the error of a switch or block (what) that lists
// nodes no NodeName line declares; none when it lists none.
func (p *parser) undeclaredIn(confPath, file string, line int, what string, nodes []string) []error {
	var missing []string
	for _, n := range nodes {
		if !p.declared[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	list := hostlist.Compress(missing)
	return []error{lineErr(file, line, "%s lists %s, which no NodeName line of %s declares: correct the name, or declare the node there",
		what, list, confPath)}
}

// warnUnswitched warns about declared nodes under no switch of a tree.
func (p *parser) warnUnswitched(file string, t *topology.Tree) {
	if len(t.Switches()) == 0 {
		return
	}
	var lost []string
	for n := range p.declared {
		if t.LeafOf(n) == "" {
			lost = append(lost, n)
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s: switches lack access to %d nodes: %s: each is placed as if on a switch of its own; list them under a leaf switch",
			file, len(lost), hostlist.Compress(lost)))
	}
}
