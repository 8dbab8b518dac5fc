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
	// NodeInval: the node registered with fewer CPUs, less memory or
	// fewer GPUs than its NodeName line declares (Slurm's INVAL); it is
	// not used until it registers with what is declared.
	NodeInval NodeState = "INVAL"
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

	NICs []NIC // RDMA ports, as the agent last registered them

	State      NodeState
	Reason     string
	ReasonUser string    // who set the reason: a user, or SystemUser
	Registered time.Time // last registration
	StateTime  time.Time // last state change
	// RegisteredIndex and StateIndex are the Raft entries of the last
	// registration and the last state change (0: unknown, stored before
	// they were kept). The store sets them: unlike the times, which the
	// leader of the day chose with its own clock, they order the two.
	RegisteredIndex, StateIndex uint64
	// Health is the verdict of its agent's health checks: every failing
	// check as one line ("check: message; ..."), empty when they all pass
	// (or the agent checks nothing). See SetHealth.
	Health string
	// Fences: its agent registered tasks that stop by themselves when the
	// node's lease ends (a lease the controller grants with every answer,
	// shorter than the silence after which it declares a node lost). The
	// jobs of such a node declared lost are restarted elsewhere: nothing of
	// them runs there any more.
	Fences bool
}

// SystemUser is the reason user of states Phalanx itself sets: a node not
// responding, or drained by its agent's health checks.
const SystemUser = "phalanx"

// NIC is one port of a node's RDMA device, as its agent found it.
type NIC struct {
	Device    string // e.g. mlx5_0
	Port      int
	State     string // ACTIVE, DOWN, ...
	PhysState string // LinkUp, Disabled, ...
	Rate      string // e.g. "200 Gb/sec (4X HDR)"
	LinkLayer string // InfiniBand or Ethernet
	Netdev    string // RoCE: the Ethernet interface
	PCIAddr   string
	NUMANode  int   // -1: unknown
	GPUs      []int // the nearest GPUs, by index
	Affinity  string
}

// Clone returns a deep copy.
func (n *Node) Clone() *Node {
	c := *n
	c.Features = append([]string(nil), n.Features...)
	if n.NICs != nil {
		c.NICs = make([]NIC, len(n.NICs))
		for i, nic := range n.NICs {
			nic.GPUs = append([]int(nil), nic.GPUs...)
			c.NICs[i] = nic
		}
	}
	return &c
}

// DisplayState is the state sinfo and scontrol print: DOWN and DRAIN come
// from the stored state; an UP node is IDLE, MIXED or ALLOCATED by how many
// of its GPUs (or, without GPUs, CPUs) are in use. A draining node still runs
// jobs.
func DisplayState(n *Node, usedGPUs, usedCPUs int) string {
	busy := usedGPUs > 0 || usedCPUs > 0
	full := (n.GPUs > 0 && usedGPUs >= n.GPUs) || (n.GPUs == 0 && n.CPUs > 0 && usedCPUs >= n.CPUs)
	return displayState(n, busy, full, false)
}

// DisplayState is the node's displayed state (the function of that name)
// by what its live jobs hold: a node with a live job is at least MIXED,
// even one that asked for no GPU and no CPU (Slurm gives every task a
// CPU); one held by an exclusive job (--exclusive, --mem=0) is ALLOCATED.
// A job completing on it (ended, its tasks still stopping) makes an
// ALLOCATED node ALLOCATED+ and any other COMPLETING, as Slurm's
// completing flag does.
func (u NodeUsage) DisplayState(n *Node) string {
	busy := u.Jobs > 0 || len(u.GPUs) > 0 || u.CPUs > 0
	full := u.Exclusive || (n.GPUs > 0 && len(u.GPUs) >= n.GPUs) || (n.GPUs == 0 && n.CPUs > 0 && u.CPUs >= n.CPUs)
	return displayState(n, busy, full, u.Completing)
}

func displayState(n *Node, busy, full, completing bool) string {
	switch n.State {
	case NodeDown:
		return "DOWN"
	case NodeInval:
		return "INVAL"
	case NodeDrain:
		if busy {
			return "DRAINING"
		}
		return "DRAINED"
	}
	switch {
	case full && completing:
		return "ALLOCATED+"
	case full:
		return "ALLOCATED"
	case completing:
		return "COMPLETING"
	case busy:
		return "MIXED"
	}
	return "IDLE"
}
