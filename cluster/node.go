package cluster

import "time"

// NodeState is a node's administrative and health state as stored. What
// sinfo shows (IDLE, MIXED, ALLOCATED, DRAINING, DRAINED, DOWN) is derived
// from it and from the allocations on the node; see DisplayState.
type NodeState string

// Stored node states.
const (
	NodeUp    NodeState = "UP"
	NodeDown  NodeState = "DOWN"
	NodeDrain NodeState = "DRAIN"
)

// Node is one host as the controller knows it.
type Node struct {
	Name     string
	Addr     string // the agent's address, for logs and MASTER_ADDR
	CPUs     int
	MemoryMB int64
	GPUs     int
	GPUModel string
	Features []string
	Weight   int    // Slurm node Weight: lower is used first; 0 is the default
	Leaf     string // leaf switch from topology.conf; empty: unknown

	State      NodeState
	Reason     string
	Registered time.Time // last registration
	StateTime  time.Time // last state change
}

// Clone returns a deep copy.
func (n *Node) Clone() *Node {
	c := *n
	c.Features = append([]string(nil), n.Features...)
	return &c
}

// DisplayState is the state sinfo and scontrol print: DOWN and DRAIN come
// from the stored state; an UP node is IDLE, MIXED or ALLOCATED by how many
// of its GPUs (or, without GPUs, CPUs) are in use. A draining node still runs
// jobs.
func DisplayState(n *Node, usedGPUs, usedCPUs int) string {
	busy := usedGPUs > 0 || usedCPUs > 0
	full := (n.GPUs > 0 && usedGPUs >= n.GPUs) || (n.GPUs == 0 && n.CPUs > 0 && usedCPUs >= n.CPUs)
	switch n.State {
	case NodeDown:
		return "DOWN"
	case NodeDrain:
		if busy {
			return "DRAINING"
		}
		return "DRAINED"
	}
	switch {
	case full:
		return "ALLOCATED"
	case busy:
		return "MIXED"
	}
	return "IDLE"
}
