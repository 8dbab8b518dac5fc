package nodeagent

import (
	"context"
	"fmt"
	"slices"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
)

// Health. The agent keeps the list of its node's failing checks and sends
// it with every heartbeat (HeartbeatRequest.health); a change sends a
// heartbeat at once. The controller drains the node while the list is not
// empty, and resumes it when the list empties (controller/health.go).
//
// Checks so far: the link of every RDMA port (check "rdma-link"), watched
// by Config.NICWatcher; the GPUs' XIDs, ECC errors, row remaps, presence
// and temperature (checks "gpu-*"), watched by Config.GPUWatcher; the
// administrator's health program (healthprog.go); disk, /dev/shm and
// memlock (nodechecks.go).
//
// A GPU's state (an ECC error not yet reset, a lost GPU) is a problem
// while it holds. An XID is an event: one the application caused is only
// logged (the job fails by itself); any other stays on the list, as an
// event problem, until an administrator resumes the node: the heartbeat's
// reply says when, and the events seen before then are forgotten. So does
// a failed pre-start check that is the node's fault (gate.go).

// NICWatcher follows the node's RDMA ports: it calls changed with all of
// them whenever one's link state changes, until ctx ends.
type NICWatcher interface {
	Run(ctx context.Context, ports []rdma.Port, changed func([]rdma.Port))
	// Read returns ports with their states now.
	Read(ports []rdma.Port) []rdma.Port
}

var _ NICWatcher = (*rdma.Watcher)(nil)

// GPUWatcher follows the node's GPUs: levels gets the GPUs' failing
// states whenever they change, event each XID or ECC event, until ctx
// ends. An error means it could not watch at all.
type GPUWatcher interface {
	Run(ctx context.Context, levels func([]gpu.Verdict), event func(gpu.Verdict)) error
	// Check polls the GPUs now and returns their failing states.
	Check() []gpu.Verdict
}

var _ GPUWatcher = (*gpu.Watcher)(nil)

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
	old := a.health.setNICs(ports)
	for i, p := range ports {
		if i < len(old) && old[i].State == p.State && old[i].PhysState == p.PhysState {
			continue
		}
		if p.Up() {
			a.log.Info("RDMA port up", "port", p.Name(), "state", p.State, "phys_state", p.PhysState)
		} else {
			a.log.Warn("RDMA port down", "port", p.Name(), "state", p.State, "phys_state", p.PhysState)
			a.stopTasksOnPort(p)
		}
	}
	a.health.wake()
}

// stopTasksOnPort stops, as their node's fault, the tasks of jobs across
// nodes whose GPUs the port serves (every such task when the port is near
// no GPU, or the task's GPUs are not known): their collectives cannot go
// on. A job on this node alone does not need the port.
func (a *Agent) stopTasksOnPort(p rdma.Port) {
	why := fmt.Sprintf("rdma-link: %s %s (%s) under a job across nodes; node drained", p.Name(), p.State, p.PhysState)
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, t := range a.tasks {
		if t.nodes == 1 {
			continue
		}
		if t.gpus != nil && len(p.GPUs) > 0 && !slices.ContainsFunc(p.GPUs, func(g int) bool { return slices.Contains(t.gpus, g) }) {
			continue
		}
		a.log.Warn("stopping a task whose RDMA port went down", "task", key, "port", p.Name())
		t.stop(a.lostStop(why))
	}
}

// watchGPUs runs the GPU watcher until ctx ends. A watcher that cannot
// start (NVML fails to initialise) is a problem of the node's: its GPUs
// are registered but cannot be seen.
func (a *Agent) watchGPUs(ctx context.Context) {
	if a.cfg.GPUWatcher == nil || len(a.cfg.GPUs) == 0 {
		return
	}
	err := a.cfg.GPUWatcher.Run(ctx, a.gpuLevelsChanged, a.gpuEvent)
	if err != nil && ctx.Err() == nil {
		a.log.Error("cannot watch the GPUs", "err", err)
		a.gpuLevelsChanged([]gpu.Verdict{{GPU: -1, Check: gpu.CheckLost, Class: gpu.ClassHardware,
			Evidence: "NVML unusable (" + err.Error() + ")", At: a.cfg.Clock.Now()}})
	}
}

// gpuLevelsChanged records the GPUs' failing states and sends a heartbeat
// now.
func (a *Agent) gpuLevelsChanged(vs []gpu.Verdict) {
	a.health.setGPULevels(vs)
	for _, v := range vs {
		a.log.Warn("GPU unhealthy", "gpu", v.GPU, "uuid", v.UUID, "check", v.Check, "class", v.Class, "evidence", v.Evidence)
	}
	if len(vs) == 0 {
		a.log.Info("GPUs healthy")
	}
	a.health.wake()
}

// gpuEvent holds an XID or ECC event the node must be drained for; one
// the application caused is only logged.
func (a *Agent) gpuEvent(v gpu.Verdict) {
	if v.Class == gpu.ClassApp {
		a.log.Warn("GPU error caused by the application: the node stays in service", "gpu", v.GPU, "uuid", v.UUID, "evidence", v.Evidence)
		return
	}
	a.log.Error("GPU error: draining the node", "gpu", v.GPU, "uuid", v.UUID, "class", v.Class, "evidence", v.Evidence)
	a.health.hold(heldEvent{check: v.Check, message: v.Message(), gpu: v.GPU, at: v.At})
	a.stopTasksOnGPU(v.GPU, v.Message()+"; node drained")
}

// stopTasksOnGPU stops the tasks that use GPU gpu (-1: every task; a task
// whose GPUs are not known counts as using it) as their node's fault: they
// are reported LOST, their attempts end NODE_FAIL with the node at fault,
// and their jobs restart elsewhere (DESIGN: a reset-class or hardware XID
// drains the node and requeues the job).
func (a *Agent) stopTasksOnGPU(gpu int, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, t := range a.tasks {
		if gpu >= 0 && t.gpus != nil && !slices.Contains(t.gpus, gpu) {
			continue
		}
		a.log.Warn("stopping a task on a failed GPU", "task", key, "gpu", gpu)
		t.stop(a.lostStop(why))
	}
}

// forgetEvents drops the events seen before an administrator resumed the
// node.
func (a *Agent) forgetEvents(resumed time.Time) {
	for _, e := range a.health.forget(resumed) {
		a.log.Info("event forgotten: an administrator resumed the node", "check", e.check, "message", e.message)
	}
}

// waitHealthAck waits until a heartbeat carrying generation gen was
// acknowledged, or timeout passes, or the agent stops talking to the
// controllers (false).
func (a *Agent) waitHealthAck(gen uint64, timeout time.Duration) bool {
	return a.health.waitAck(gen, a.cfg.Clock.After(timeout), a.sessionOver)
}

// refreshNICs registers the node again when its ports changed since it
// last did, so that the controller shows their current states (a
// registration keeps the node's state and reason). A failure is retried
// with the next heartbeat.
func (a *Agent) refreshNICs(ctx context.Context) {
	if !a.health.takeStale() {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	if _, err := a.client.RegisterNode(callCtx, a.registration()); err != nil {
		a.health.markStale()
		if ctx.Err() == nil {
			a.log.Warn("could not send the RDMA ports' new states", "err", err)
		}
	}
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
