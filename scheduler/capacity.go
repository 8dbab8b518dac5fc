package scheduler

import (
	"sort"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// request is what a job asks of each of its nodes.
type request struct {
	nodes    int
	gpus     int
	cpus     int
	memoryMB int64
	gpuType  string // lower case; empty: any model
}

func requestOf(j *cluster.Job) request {
	return request{
		nodes:    max(j.Nodes, 1),
		gpus:     max(j.GPUsPerNode, 0),
		cpus:     max(j.CPUsPerNode, 0),
		memoryMB: max(j.MemoryMB, 0),
		gpuType:  strings.ToLower(j.GPUType),
	}
}

// modelOK reports whether the node has the GPU model the request names: a
// case-insensitive substring of Node.GPUModel.
func (r request) modelOK(n *cluster.Node) bool {
	return r.gpuType == "" || strings.Contains(strings.ToLower(n.GPUModel), r.gpuType)
}

// nodeCap is one node's free capacity during a pass.
type nodeCap struct {
	node     *cluster.Node
	leaf     string
	gpus     []int // free GPU indices, ascending
	cpus     int
	memoryMB int64
}

// fits reports whether the free capacity covers the request on this node.
func (c *nodeCap) fits(r request) bool {
	return len(c.gpus) >= r.gpus && c.cpus >= r.cpus && c.memoryMB >= r.memoryMB
}

// take removes the request from the free capacity (lowest GPU indices
// first) and returns what was taken.
func (c *nodeCap) take(r request) cluster.NodeAlloc {
	a := cluster.NodeAlloc{
		Node:     c.node.Name,
		GPUs:     append([]int(nil), c.gpus[:r.gpus]...),
		CPUs:     r.cpus,
		MemoryMB: r.memoryMB,
	}
	c.gpus = c.gpus[r.gpus:]
	c.cpus -= r.cpus
	c.memoryMB -= r.memoryMB
	return a
}

// pool is the free capacity of every node, indexed by name and partition.
type pool struct {
	nodes map[string]*nodeCap
	parts map[string]*partition
}

// partition is a partition with its member nodes in name order.
type partition struct {
	*cluster.Partition
	members []*nodeCap
	never   map[request]error // neverFits, memoized: queues repeat shapes
}

func newPool(s *Snapshot) *pool {
	p := &pool{nodes: make(map[string]*nodeCap, len(s.Nodes)), parts: map[string]*partition{}}
	usage := cluster.Usage(s.Jobs)
	sorted := make([]*nodeCap, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		if _, dup := p.nodes[n.Name]; dup {
			continue
		}
		c := freeCapacity(n, usage[n.Name])
		c.leaf = s.Topology.LeafOf(n.Name)
		if c.leaf == "" {
			c.leaf = n.Leaf
		}
		p.nodes[n.Name] = c
		sorted = append(sorted, c)
	}
	sort.Slice(sorted, func(i, j int) bool { return hostlist.Less(sorted[i].node.Name, sorted[j].node.Name) })
	for _, part := range s.Partitions {
		p.parts[part.Name] = newPartition(part, sorted)
	}
	return p
}

// newPartition collects the partition's nodes, keeping the name order.
func newPartition(part *cluster.Partition, sorted []*nodeCap) *partition {
	pp := &partition{Partition: part, never: map[request]error{}}
	in := make(map[string]bool, len(part.Nodes))
	for _, n := range part.Nodes {
		in[n] = true
	}
	for _, c := range sorted {
		if part.AllNodes || in[c.node.Name] {
			pp.members = append(pp.members, c)
		}
	}
	return pp
}

// freeCapacity is the node's resources less what live jobs hold.
func freeCapacity(n *cluster.Node, u cluster.NodeUsage) *nodeCap {
	used := make(map[int]bool, len(u.GPUs))
	for _, g := range u.GPUs {
		used[g] = true
	}
	c := &nodeCap{node: n, cpus: n.CPUs - u.CPUs, memoryMB: n.MemoryMB - u.MemoryMB}
	for g := 0; g < n.GPUs; g++ {
		if !used[g] {
			c.gpus = append(c.gpus, g)
		}
	}
	return c
}

// whole is the node's capacity as if nothing ran on it.
func whole(c *nodeCap) *nodeCap {
	w := freeCapacity(c.node, cluster.NodeUsage{})
	w.leaf = c.leaf
	return w
}
