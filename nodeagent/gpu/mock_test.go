package gpu

import (
	"path/filepath"
	"testing"

	"github.com/phalanx-hpc/phalanx/internal/fakegpu"
)

// The faults a fake GPU file held before the mock started are history:
// a GPU lost and reset is back, one with an ECC error still has it, and
// none of their XIDs is raised again (a restarted agent drained the node
// anew for an XID 79 of the past). The UUIDs are the ones the last run had.
func TestFakeFaultsBeforeStartAreHistory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gpu-faults")
	for _, f := range []fakegpu.Fault{
		{Kind: fakegpu.Lost, GPU: 5}, {Kind: fakegpu.Reset, GPU: 5},
		{Kind: fakegpu.ECC, GPU: 2}, {Kind: fakegpu.XID, GPU: 3, XID: 48},
	} {
		if err := fakegpu.Inject(file, f); err != nil {
			t.Fatal(err)
		}
	}
	m := newMock(8, "NVIDIA A100-SXM4-80GB", file, nil)
	if m.lost(5) {
		t.Error("GPU 5, lost and reset before the start, is lost")
	}
	m.mu.Lock()
	pending, queued := m.health[2].remapPending, len(m.queue)
	m.mu.Unlock()
	if !pending {
		t.Error("GPU 2's uncorrectable ECC error, not reset, is gone after the start")
	}
	if queued != 0 {
		t.Errorf("%d events of faults from before the start raised again", queued)
	}
	if err := fakegpu.Inject(file, fakegpu.Fault{Kind: fakegpu.XID, GPU: 3, XID: 48}); err != nil {
		t.Fatal(err)
	}
	m.sync()
	if m.mu.Lock(); len(m.queue) != 1 {
		t.Errorf("%d events queued for an XID injected while running; want 1", len(m.queue))
	}
	m.mu.Unlock()

	again := newMock(8, "NVIDIA A100-SXM4-80GB", file, nil)
	other := newMock(8, "NVIDIA A100-SXM4-80GB", filepath.Join(t.TempDir(), "gpu-faults"), nil)
	for i := range m.devs {
		if again.devs[i].UUID != m.devs[i].UUID {
			t.Errorf("GPU %d: UUID %s, then %s after a restart", i, m.devs[i].UUID, again.devs[i].UUID)
		}
		if other.devs[i].UUID == m.devs[i].UUID {
			t.Errorf("GPU %d has UUID %s on two nodes", i, m.devs[i].UUID)
		}
	}
}
