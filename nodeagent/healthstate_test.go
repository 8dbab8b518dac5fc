package nodeagent

import (
	"slices"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
)

// The health state alone: held events are kept once each, counted in
// generations the controller acknowledges, forgotten when an administrator
// resumes the node; the heartbeat lists every failing check.
func TestHealthState(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	down := rdma.Port{Device: "mlx5_1", Port: 1, State: "DOWN", PhysState: "Disabled"}
	up := rdma.Port{Device: "mlx5_0", Port: 1, State: "ACTIVE", PhysState: "LinkUp"}
	h := newHealthState([]rdma.Port{up})
	if len(h.problems()) != 0 || h.takeStale() {
		t.Fatalf("a new state: problems %v, stale %v; want none", h.problems(), h.takeStale())
	}

	xid := heldEvent{check: "gpu-xid", message: "GPU 2: XID 48", gpu: 2, at: t0}
	gen := h.hold(xid)
	if again := h.hold(xid); again != gen || gen != 1 {
		t.Errorf("generations %d then %d for the same event; want 1 twice", gen, again)
	}
	select {
	case <-h.changed:
	default:
		t.Error("holding an event did not wake the heartbeat loop")
	}
	if msg, held := h.heldOn([]int{1, 2}); !held || msg != xid.message {
		t.Errorf("heldOn GPUs 1,2 = %q %v; want the XID", msg, held)
	}
	if _, held := h.heldOn([]int{0}); held {
		t.Error("heldOn GPU 0: held; want not")
	}

	over := make(chan struct{})
	if h.waitAck(gen, time.After(10*time.Millisecond), over) {
		t.Error("waitAck before any acknowledgement: true")
	}
	if h.sent() != gen {
		t.Errorf("a heartbeat now carries generation %d; want %d", h.sent(), gen)
	}
	h.acknowledge(gen)
	if !h.waitAck(gen, nil, over) {
		t.Error("waitAck after the acknowledgement: false")
	}

	if old := h.setNICs([]rdma.Port{up, down}); len(old) != 1 || !h.takeStale() || h.takeStale() {
		t.Errorf("setNICs returned %v and staleness did not hold once", old)
	}
	h.setProgramProblem("nhc: /scratch not mounted")
	if !h.setNodeProblems([]problem{{"disk", "/var full"}}) || h.setNodeProblems([]problem{{"disk", "/var full"}}) {
		t.Error("setNodeProblems: want changed once, then not")
	}
	var checks []string
	for _, p := range h.problems() {
		checks = append(checks, p.Check+": "+p.Message)
	}
	want := []string{"rdma-link: mlx5_1/1 DOWN (Disabled)", "gpu-xid: GPU 2: XID 48", "health-program: nhc: /scratch not mounted", "disk: /var full"}
	if !slices.Equal(checks, want) {
		t.Errorf("problems %q; want %q", checks, want)
	}

	later := heldEvent{check: "gate", message: "prolog failed", gpu: -1, at: t0.Add(time.Hour)}
	h.hold(later)
	if gone := h.forget(t0.Add(time.Minute)); len(gone) != 1 || gone[0].message != xid.message {
		t.Errorf("resumed between the two: forgot %v; want the XID alone", gone)
	}
	if _, held := h.heldOn([]int{2}); held {
		t.Error("the XID is still held after the resume")
	}
}
