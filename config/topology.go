package config

import (
	"path/filepath"
	"strings"
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
