package scheduler

import "github.com/phalanx-hpc/phalanx/cluster"

// MASTER_PORT is part of the plan: a placement carries the port its rank
// 0 listens on, the lowest of Options' range that no other live job whose
// rank 0 is on the same node uses (nor a placement earlier in the same
// pass). A job whose rank-0 node has none left is not placed: it waits
// with ReasonMasterPorts, and its nodes stay free for the jobs behind it.
// With no range (Options.MasterPortMin 0) no port is chosen.

// ReasonMasterPorts: every MASTER_PORT of the controller's range is used
// by live jobs whose rank 0 is on the node chosen for this job's.
const ReasonMasterPorts cluster.PendingReason = "MasterPortsInUse"

// masterPorts is the ports in use per node, built from the live jobs the
// first time a port is asked for.
type masterPorts struct {
	used map[string]map[int]bool
}

// masterPort picks rank 0's port on node and marks it used; ok is false
// when the range is used up there. Without a range it gives 0.
func (p *pass) masterPort(node string) (port int, ok bool) {
	lo, hi := p.opt.MasterPortMin, p.opt.MasterPortMax
	if lo <= 0 {
		return 0, true
	}
	if p.ports.used == nil {
		p.ports.used = map[string]map[int]bool{}
		for _, j := range p.s.Jobs {
			if j.Live() && len(j.Alloc.Nodes) > 0 && j.MasterPort > 0 {
				p.ports.take(j.Alloc.Nodes[0].Node, j.MasterPort)
			}
		}
	}
	for port := lo; port <= hi; port++ {
		if !p.ports.used[node][port] {
			p.ports.take(node, port)
			return port, true
		}
	}
	return 0, false
}

func (m *masterPorts) take(node string, port int) {
	if m.used[node] == nil {
		m.used[node] = map[int]bool{}
	}
	m.used[node][port] = true
}
