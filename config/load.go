package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/phalanx-hpc/phalanx/topology"
)

// Load reads and parses the config file at path, and checks the
// gres.conf beside it, when there is one, against its NodeName lines.
// The problems of both are reported together, each naming its file and
// line (up to a limit).
func Load(path string) (*Config, error) {
	p, errs, err := load(path)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs, path)
	}
	return p.cfg, nil
}

// LoadWithTopology is Load, and reads the topology.conf the config names
// (TopologyFile, else topology.conf beside it with TopologyPlugin=tree or
// block; Config.TopologyPath), or topoPath when it is not "". The tree is
// nil when there is no topology. The problems of the config, its gres.conf
// and its topology.conf are reported together, each naming its file and
// line: only a config that cannot be read stops the others.
func LoadWithTopology(path, topoPath string) (*Config, *topology.Tree, error) {
	p, errs, err := load(path)
	if err != nil {
		return nil, nil, err
	}
	own := topoPath == ""
	if own {
		topoPath = p.cfg.TopologyPath(path)
	}
	if own && topoPath == "" && p.cfg.TopologyPlugin == "" {
		p.unreadTopology(path)
	}
	var tree *topology.Tree
	if topoPath != "" {
		tree, err = topology.Load(topoPath)
		if own && errors.Is(err, fs.ErrNotExist) {
			err = p.topologyMissing(path, err)
		}
		errs = append(errs, flatten(err)...)
		errs = append(errs, p.checkTopologyNodes(path, topoPath, tree)...)
	}
	if len(errs) > 0 {
		return nil, nil, joinErrors(errs, path)
	}
	return p.cfg, tree, nil
}

// load parses the config at path and checks its gres.conf; err is a config
// that cannot be read, errs the problems found.
func load(path string) (p *parser, errs []error, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	p = parseAll(f, path)
	// gres.conf beside it, as Slurm reads it, with the config's problems.
	return p, append(p.errs, p.loadGres(path)...), nil
}

// topologyMissing says which line of the config names the topology.conf
// that is not there.
func (p *parser) topologyMissing(path string, err error) error {
	if loc, ok := p.globalLine["topologyfile"]; ok {
		return fmt.Errorf("%s: TopologyFile=%s: %w", loc, p.cfg.TopologyFile, err)
	}
	if loc, ok := p.globalLine["topologyplugin"]; ok {
		return fmt.Errorf("%s: TopologyPlugin=%s reads topology.conf beside %s: %w; write one, or name another with TopologyFile=",
			loc, p.cfg.TopologyPlugin, path, err)
	}
	return err
}

// flatten returns the errors a joined error holds, or err alone.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// unreadTopology warns about a topology.conf beside the config that
// nothing reads: without a TopologyPlugin (Slurm's default, topology/flat,
// has no switches) placement would see one leaf, as Slurm's would, and
// the file looks as if it counted.
func (p *parser) unreadTopology(path string) {
	beside := filepath.Join(filepath.Dir(path), "topology.conf")
	if _, err := os.Stat(beside); err == nil {
		p.cfg.Warnings = append(p.cfg.Warnings, beside+": not read: the config sets no TopologyPlugin (Slurm's default, "+
			"topology/flat, has no switches): set TopologyPlugin=topology/tree or topology/block to use it, or topology/flat to say so")
	}
}
