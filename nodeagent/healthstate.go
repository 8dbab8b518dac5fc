package nodeagent

import (
	"slices"
	"sync"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// healthState is what the heartbeats say of the node's health (see
// health.go): the RDMA ports and the GPUs' failing states as last read,
// the events held until an administrator resumes the node, the health
// program's and the built-in checks' failures, and how far the controller
// has acknowledged them. A change that the controller must hear of wakes
// the heartbeat loop (changed). It has its own lock: the agent's decisions
// on its tasks (stop those on a failed GPU or port) are the agent's.
type healthState struct {
	changed chan struct{} // a heartbeat is due now

	mu             sync.Mutex
	nics           []rdma.Port   // as last read
	nicsStale      bool          // changed since the last registration
	gpuLevels      []gpu.Verdict // the GPUs' failing states, as last polled
	events         []heldEvent   // XIDs and failed gates: drained for until an admin resumes
	programProblem string        // what the health program's last run found wrong; "": it passed
	nodeProblems   []problem     // the built-in checks' failures
	// gen counts the changes to events; acked is the last generation a
	// heartbeat reply acknowledged; ack is closed (and replaced) at each
	// acknowledgement.
	gen, acked uint64
	ack        chan struct{}
}

// heldEvent is a failure seen once that keeps the node drained until an
// administrator resumes it: a GPU's XID, a failed pre-start check.
type heldEvent struct {
	check, message string
	gpu            int // the GPU it concerns; -1: none, or not known which
	at             time.Time
}

// problem is a failing check as the agent keeps it (the GPUs' verdicts
// aside, which carry more); problems turns them all into the heartbeat's
// wire form.
type problem struct{ check, message string }

func newHealthState(nics []rdma.Port) *healthState {
	return &healthState{changed: make(chan struct{}, 1), ack: make(chan struct{}), nics: nics}
}

// wake makes the heartbeat loop send one now.
func (h *healthState) wake() {
	select {
	case h.changed <- struct{}{}:
	default: // one is due already
	}
}

// setNICs records the ports' new states, to be registered again, and
// returns the states before.
func (h *healthState) setNICs(ports []rdma.Port) (old []rdma.Port) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old, h.nics, h.nicsStale = h.nics, ports, true
	return old
}

// currentNICs returns the ports as last read.
func (h *healthState) currentNICs() []rdma.Port {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nics
}

// takeStale reports whether the ports changed since the last registration,
// which the caller is about to send: they are current from then on.
func (h *healthState) takeStale() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	stale := h.nicsStale
	h.nicsStale = false
	return stale
}

// markStale says that a registration meant to carry the ports' states
// failed: the next heartbeat tries again.
func (h *healthState) markStale() {
	h.mu.Lock()
	h.nicsStale = true
	h.mu.Unlock()
}

// setGPULevels records the GPUs' failing states.
func (h *healthState) setGPULevels(vs []gpu.Verdict) {
	h.mu.Lock()
	h.gpuLevels = vs
	h.mu.Unlock()
}

// setProgramProblem records what the health program found wrong ("": it
// passed) and returns what it found before.
func (h *healthState) setProgramProblem(msg string) (old string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old, h.programProblem = h.programProblem, msg
	return old
}

// setNodeProblems records the built-in checks' failures and reports
// whether they changed.
func (h *healthState) setNodeProblems(found []problem) (changed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	changed = !slices.Equal(found, h.nodeProblems)
	h.nodeProblems = found
	return changed
}

// hold adds e to the held events, unless the same is held already, and
// wakes the heartbeat loop. It returns the generation whose
// acknowledgement says the controller has it (waitAck).
func (h *healthState) hold(e heldEvent) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.ContainsFunc(h.events, func(o heldEvent) bool { return o.check == e.check && o.message == e.message }) {
		h.events = append(h.events, e)
		h.gen++
		h.wake()
	}
	return h.gen
}

// heldOn returns the message of an event held against one of gpus, if
// any.
func (h *healthState) heldOn(gpus []int) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e.gpu >= 0 && slices.Contains(gpus, e.gpu) {
			return e.message, true
		}
	}
	return "", false
}

// forget drops the events seen before an administrator resumed the node,
// and returns them.
func (h *healthState) forget(resumed time.Time) (forgotten []heldEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	kept := h.events[:0]
	for _, e := range h.events {
		if e.at.Before(resumed) {
			forgotten = append(forgotten, e)
		} else {
			kept = append(kept, e)
		}
	}
	h.events = kept
	return forgotten
}

// sent is the generation a heartbeat about to be sent carries.
func (h *healthState) sent() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gen
}

// acknowledge records that the controller acknowledged a heartbeat
// carrying generation gen, and wakes those waiting for it.
func (h *healthState) acknowledge(gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen > h.acked {
		h.acked = gen
		close(h.ack)
		h.ack = make(chan struct{})
	}
}

// waitAck waits until a heartbeat carrying generation gen was
// acknowledged (true), or deadline fires or over is closed (false).
func (h *healthState) waitAck(gen uint64, deadline <-chan time.Time, over <-chan struct{}) bool {
	for {
		h.mu.Lock()
		acked, ch := h.acked >= gen, h.ack
		h.mu.Unlock()
		if acked {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return false
		case <-over:
			return false
		}
	}
}

// problems lists the checks failing now, and the events not yet dealt
// with, as the heartbeat carries them.
func (h *healthState) problems() []*phalanxv1.HealthProblem {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*phalanxv1.HealthProblem
	for _, p := range h.nics {
		if !p.Up() {
			out = append(out, &phalanxv1.HealthProblem{Check: checkRDMALink,
				Message: p.Name() + " " + p.State + " (" + p.PhysState + ")"})
		}
	}
	for _, v := range h.gpuLevels {
		out = append(out, &phalanxv1.HealthProblem{Check: v.Check, Message: v.Message(), Since: timestamppb.New(v.At)})
	}
	for _, e := range h.events {
		out = append(out, &phalanxv1.HealthProblem{Check: e.check, Message: e.message, Event: true, Since: timestamppb.New(e.at)})
	}
	if h.programProblem != "" {
		out = append(out, &phalanxv1.HealthProblem{Check: checkHealthProgram, Message: h.programProblem})
	}
	for _, p := range h.nodeProblems {
		out = append(out, &phalanxv1.HealthProblem{Check: p.check, Message: p.message})
	}
	return out
}
