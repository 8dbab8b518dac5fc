package devcluster

import (
	"fmt"
	"path/filepath"

	"github.com/phalanx-hpc/phalanx/config"
	"github.com/phalanx-hpc/phalanx/internal/fakesysfs"
)

// A dev cluster from a real config (phx dev --config slurm.conf): one fake
// node per NodeName line, with the CPUs, memory and GPUs it declares; the
// controllers read the file itself (through an Include), so its
// partitions, features and other keys apply as written, and its topology
// (--topology, else TopologyFile, or topology.conf beside it with
// TopologyPlugin=topology/tree or topology/block).

// MaxConfigNodes bounds the nodes of a dev cluster, from a config or
// --nodes: each is an agent process on this machine (phx sim takes
// thousands).
const MaxConfigNodes = 64

// MaxGPUsPerNode bounds a dev node's fake GPUs (and its fake NICs, one per
// GPU).
const MaxGPUsPerNode = fakesysfs.MaxDevices

// NodeHardware is what one fake node registers.
type NodeHardware struct {
	GPUs     int
	GPUModel string
	CPUs     int
	MemoryMB int64
}

// hardware is what node name registers: its NodeName line's, else every
// node's.
func (l Layout) hardware(name string) NodeHardware {
	if h, ok := l.Hardware[name]; ok {
		return h
	}
	return NodeHardware{GPUs: l.GPUsPerNode, GPUModel: l.GPUModel, CPUs: l.CPUs, MemoryMB: l.MemoryMB}
}

// fromConfig lays out the nodes of the config at o.Config.
func (c *Cluster) fromConfig(o Options) error {
	path, err := filepath.Abs(o.Config)
	if err != nil {
		return err
	}
	// The config with its topology.conf, as the controllers will read
	// them, every problem of both in one error.
	conf, _, err := config.LoadWithTopology(path, o.Topology)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	c.Warnings = conf.Warnings
	switch n := len(conf.Nodes); {
	case n == 0:
		return fmt.Errorf("--config %s declares no nodes: phx dev makes one fake node per NodeName line", o.Config)
	case n > MaxConfigNodes:
		return fmt.Errorf("--config %s declares %d nodes: phx dev runs an agent process for each, at most %d; try the cluster's scheduling with phx sim", o.Config, n, MaxConfigNodes)
	}
	topo := o.Topology
	if topo == "" {
		topo = conf.TopologyPath(path)
	}
	if topo != "" {
		if topo, err = filepath.Abs(topo); err != nil {
			return err
		}
	}
	c.Layout.Config, c.Layout.Topology = path, topo
	c.Layout.Hardware = map[string]NodeHardware{}
	c.Layout.Nodes = nil
	for _, n := range conf.Nodes {
		if n.GPUs > MaxGPUsPerNode {
			return fmt.Errorf("--config %s: node %s declares %d GPUs: a phx dev node fakes at most %d", o.Config, n.Name, n.GPUs, MaxGPUsPerNode)
		}
		h := NodeHardware{GPUs: n.GPUs, GPUModel: n.GPUType, CPUs: n.CPUs, MemoryMB: n.MemoryMB}
		if h.GPUModel == "" {
			h.GPUModel = o.GPUModel
		}
		if h.CPUs <= 0 {
			h.CPUs = o.CPUs
		}
		if h.MemoryMB <= 0 {
			h.MemoryMB = o.MemoryMB
		}
		c.Layout.Nodes = append(c.Layout.Nodes, n.Name)
		c.Layout.Hardware[n.Name] = h
	}
	return nil
}
