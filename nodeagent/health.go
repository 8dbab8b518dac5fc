package nodeagent

import (
	"context"
	"fmt"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
)

// Health. The agent keeps the list of its node's failing checks and sends
// it with every heartbeat (HeartbeatRequest.health); a change sends a
// heartbeat at once. The controller drains the node while the list is not
// empty, and resumes it when the list empties (controller/health.go).
//
// Checks so far: the link of every RDMA port (check "rdma-link"), watched
// by Config.NICWatcher.

// NICWatcher follows the node's RDMA ports: it calls changed with all of
// them whenever one's link state changes, until ctx ends.
type NICWatcher interface {
	Run(ctx context.Context, ports []rdma.Port, changed func([]rdma.Port))
}

var _ NICWatcher = (*rdma.Watcher)(nil)

// checkRDMALink names the RDMA link check in problems and drain reasons.
const checkRDMALink = "rdma-link"

// watchNICs runs the NIC watcher until ctx ends.
func (a *Agent) watchNICs(ctx context.Context) {
	if a.cfg.NICWatcher == nil || len(a.cfg.NICs) == 0 {
		return
	}
	a.cfg.NICWatcher.Run(ctx, a.cfg.NICs, a.nicsChanged)
}

// nicsChanged records the ports' new states and sends a heartbeat now.
func (a *Agent) nicsChanged(ports []rdma.Port) {
	a.mu.Lock()
	old := a.nics
	a.nics = ports
	a.nicsStale = true
	a.mu.Unlock()
	for i, p := range ports {
		if i < len(old) && old[i].State == p.State && old[i].PhysState == p.PhysState {
			continue
		}
		if p.Up() {
			a.log.Info("RDMA port up", "port", p.Name(), "state", p.State, "phys_state", p.PhysState)
		} else {
			a.log.Warn("RDMA port down", "port", p.Name(), "state", p.State, "phys_state", p.PhysState)
		}
	}
	a.wakeHeartbeat()
}

// wakeHeartbeat makes the heartbeat loop send one now.
func (a *Agent) wakeHeartbeat() {
	select {
	case a.healthChanged <- struct{}{}:
	default: // one is due already
	}
}

// refreshNICs registers the node again when its ports changed since it
// last did, so that the controller shows their current states (a
// registration keeps the node's state and reason). A failure is retried
// with the next heartbeat.
func (a *Agent) refreshNICs(ctx context.Context) {
	a.mu.Lock()
	stale := a.nicsStale
	a.nicsStale = false
	a.mu.Unlock()
	if !stale {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	if _, err := a.client.RegisterNode(callCtx, a.registration()); err != nil {
		a.mu.Lock()
		a.nicsStale = true
		a.mu.Unlock()
		if ctx.Err() == nil {
			a.log.Warn("could not send the RDMA ports' new states", "err", err)
		}
	}
}

// currentNICs returns the ports as last read.
func (a *Agent) currentNICs() []rdma.Port {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nics
}

// problems lists the checks failing now.
func (a *Agent) problems() []*phalanxv1.HealthProblem {
	var out []*phalanxv1.HealthProblem
	for _, p := range a.currentNICs() {
		if !p.Up() {
			out = append(out, &phalanxv1.HealthProblem{Check: checkRDMALink,
				Message: fmt.Sprintf("%s %s (%s)", p.Name(), p.State, p.PhysState)})
		}
	}
	return out
}

// nicInfo is the wire form of ports.
func nicInfo(ports []rdma.Port) []*phalanxv1.NICInfo {
	out := make([]*phalanxv1.NICInfo, 0, len(ports))
	for _, p := range ports {
		gpus := make([]int32, len(p.GPUs))
		for i, g := range p.GPUs {
			gpus[i] = int32(g)
		}
		out = append(out, &phalanxv1.NICInfo{Device: p.Device, Port: int32(p.Port), State: p.State, PhysState: p.PhysState,
			Rate: p.Rate, LinkLayer: p.LinkLayer, Netdev: p.Netdev, PciAddr: p.PCIAddr, NumaNode: int32(p.NUMANode),
			Gpus: gpus, Affinity: string(p.Affinity)})
	}
	return out
}
