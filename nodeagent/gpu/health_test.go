package gpu_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/internal/fakegpu"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
)

// watched is a Watcher running over eight fake GPUs and their fault file.
type watched struct {
	faults string
	levels chan []gpu.Verdict
	events chan gpu.Verdict
}

func watch(t *testing.T) *watched {
	t.Helper()
	w := &watched{faults: filepath.Join(t.TempDir(), "faults"), levels: make(chan []gpu.Verdict, 100), events: make(chan gpu.Verdict, 100)}
	lib, err := gpu.Open(8, "NVIDIA A100-SXM4-80GB", gpu.FaultFile(w.faults))
	if err != nil {
		t.Fatal(err)
	}
	devs, err := gpu.Discover(lib)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	watcher := &gpu.Watcher{Lib: lib, Devices: devs, Interval: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	go func() {
		done <- watcher.Run(ctx, func(v []gpu.Verdict) { w.levels <- v }, func(v gpu.Verdict) { w.events <- v })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if got := w.nextLevels(t); len(got) != 0 {
		t.Fatalf("healthy GPUs: first poll found %v", got)
	}
	return w
}

func (w *watched) inject(t *testing.T, f fakegpu.Fault) {
	t.Helper()
	if err := fakegpu.Inject(w.faults, f); err != nil {
		t.Fatal(err)
	}
}

func (w *watched) nextEvent(t *testing.T) gpu.Verdict {
	t.Helper()
	select {
	case v := <-w.events:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no GPU event within 5 s")
	}
	panic("unreachable")
}

func (w *watched) nextLevels(t *testing.T) []gpu.Verdict {
	t.Helper()
	select {
	case v := <-w.levels:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no change of the GPUs' states within 5 s")
	}
	panic("unreachable")
}

// checks lists the verdicts as "GPU check class" for comparison.
func checks(vs []gpu.Verdict) string {
	var out []string
	for _, v := range vs {
		out = append(out, strings.Join([]string{strconv.Itoa(v.GPU), v.Check, v.Class.String()}, " "))
	}
	return strings.Join(out, "; ")
}

func TestXIDEventsAreClassified(t *testing.T) {
	w := watch(t)
	for _, tc := range []struct {
		gpu, xid int
		class    gpu.Class
		evidence string
	}{
		{2, 13, gpu.ClassApp, "XID 13 (graphics engine exception)"},
		{3, 31, gpu.ClassApp, "XID 31 (GPU memory page fault)"},
		{4, 48, gpu.ClassReset, "XID 48 (double bit ECC error)"},
		{5, 74, gpu.ClassReset, "XID 74 (NVLink error)"},
		{6, 64, gpu.ClassHardware, "XID 64 (ECC page retirement or row remapping failed)"},
		{7, 999, gpu.ClassReset, "XID 999 (not in Phalanx's XID table)"},
	} {
		w.inject(t, fakegpu.Fault{Kind: fakegpu.XID, GPU: tc.gpu, XID: tc.xid})
		v := w.nextEvent(t)
		if v.GPU != tc.gpu || v.Check != gpu.CheckXID || v.Class != tc.class || v.Evidence != tc.evidence || !strings.HasPrefix(v.UUID, "GPU-") || v.At.IsZero() {
			t.Errorf("XID %d on GPU %d: verdict %+v; want class %v, evidence %q", tc.xid, tc.gpu, v, tc.class, tc.evidence)
		}
	}
	select {
	case v := <-w.levels:
		t.Errorf("XIDs alone changed the polled states: %v", v)
	default:
	}
}

func TestECCErrorNeedsAReset(t *testing.T) {
	w := watch(t)
	w.inject(t, fakegpu.Fault{Kind: fakegpu.ECC, GPU: 1})
	if v := w.nextEvent(t); v.Evidence != "XID 94 (contained ECC error)" || v.Class != gpu.ClassApp || v.GPU != 1 {
		t.Errorf("ECC error: event %+v, want XID 94 on GPU 1, the application's", v)
	}
	got := w.nextLevels(t)
	if checks(got) != "1 gpu-ecc reset; 1 gpu-row-remap reset" {
		t.Fatalf("after an ECC error: %s (%+v)", checks(got), got)
	}
	if m := got[0].Message(); m != "GPU 1 has 1 uncorrectable ECC errors since its last reset (1 in its life): reset the GPU" {
		t.Errorf("message %q", m)
	}
	w.inject(t, fakegpu.Fault{Kind: fakegpu.Reset, GPU: 1})
	if got := w.nextLevels(t); len(got) != 0 {
		t.Errorf("after a reset: %s", checks(got))
	}
}

func TestLostGPU(t *testing.T) {
	w := watch(t)
	w.inject(t, fakegpu.Fault{Kind: fakegpu.Lost, GPU: 5})
	if v := w.nextEvent(t); v.Evidence != "XID 79 (GPU has fallen off the bus)" || v.Class != gpu.ClassHardware || v.GPU != 5 {
		t.Errorf("lost GPU: event %+v, want XID 79 on GPU 5, hardware", v)
	}
	got := w.nextLevels(t)
	if checks(got) != "5 gpu-lost hardware" || got[0].Message() != "GPU 5 is gone from the bus (NVML: ERROR_GPU_IS_LOST): repair the node" {
		t.Fatalf("after losing GPU 5: %s (%+v)", checks(got), got)
	}
	// An XID on a lost GPU cannot come; one on another GPU still does.
	w.inject(t, fakegpu.Fault{Kind: fakegpu.XID, GPU: 5, XID: 13})
	w.inject(t, fakegpu.Fault{Kind: fakegpu.XID, GPU: 6, XID: 13})
	if v := w.nextEvent(t); v.GPU != 6 {
		t.Errorf("event %+v, want GPU 6's", v)
	}
	w.inject(t, fakegpu.Fault{Kind: fakegpu.Reset, GPU: 5})
	if got := w.nextLevels(t); len(got) != 0 {
		t.Errorf("after GPU 5 came back: %s", checks(got))
	}
}

func TestThermalSlowdown(t *testing.T) {
	w := watch(t)
	w.inject(t, fakegpu.Fault{Kind: fakegpu.Temperature, GPU: 0, Value: 95})
	got := w.nextLevels(t)
	if checks(got) != "0 gpu-thermal hardware" || !strings.Contains(got[0].Evidence, "HW thermal") || !strings.Contains(got[0].Evidence, "at 95 °C") {
		t.Fatalf("at 95 °C: %s (%+v)", checks(got), got)
	}
	first := got[0].At
	w.inject(t, fakegpu.Fault{Kind: fakegpu.Temperature, GPU: 3, Value: 91})
	got = w.nextLevels(t)
	if checks(got) != "0 gpu-thermal hardware; 3 gpu-thermal hardware" || !got[0].At.Equal(first) {
		t.Fatalf("two hot GPUs: %s (%+v); GPU 0's first sighting must stay %v", checks(got), got, first)
	}
	w.inject(t, fakegpu.Fault{Kind: fakegpu.Temperature, GPU: 0, Value: 60})
	w.inject(t, fakegpu.Fault{Kind: fakegpu.Temperature, GPU: 3, Value: 89})
	for got := w.nextLevels(t); len(got) != 0; got = w.nextLevels(t) { // one change per GPU, or both at once
	}
}

func TestFaultFileRejectsBadFaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "faults")
	for _, f := range []fakegpu.Fault{
		{Kind: "melt", GPU: 0},
		{Kind: fakegpu.XID, GPU: 0},
		{Kind: fakegpu.XID, GPU: -1, XID: 13},
		{Kind: fakegpu.Temperature, GPU: 0, Value: 400},
	} {
		if err := fakegpu.Inject(path, f); err == nil {
			t.Errorf("Inject(%+v) accepted it", f)
		}
	}
	if err := (fakegpu.Fault{Kind: fakegpu.ECC, GPU: 8}).Validate(8); err == nil || !strings.Contains(err.Error(), "GPUs 0 to 7") {
		t.Errorf("GPU 8 of 8: %v", err)
	}
}

func TestClassifyXID(t *testing.T) {
	for xid, want := range map[uint64]gpu.Class{13: gpu.ClassApp, 43: gpu.ClassApp, 94: gpu.ClassApp,
		48: gpu.ClassReset, 95: gpu.ClassReset, 119: gpu.ClassReset, 79: gpu.ClassHardware, 64: gpu.ClassHardware, 12345: gpu.ClassReset} {
		if _, got := gpu.ClassifyXID(xid); got != want {
			t.Errorf("XID %d: class %v, want %v", xid, got, want)
		}
	}
}

// An agent started while a GPU is lost (phx dev start after gpu-lost, a
// restart after an XID 79) registers every GPU, the lost one by its index
// alone, and its first poll finds that one lost: the node is drained with
// the reason, where the agent used to fail to start ("GPU discovery: GPU
// 3: handle: ERROR_GPU_IS_LOST") and the node went DOWN, not responding.
// Once the GPU is back, the poll passes.
func TestStartWithAGPULost(t *testing.T) {
	faults := filepath.Join(t.TempDir(), "faults")
	if err := fakegpu.Inject(faults, fakegpu.Fault{Kind: fakegpu.Lost, GPU: 3}); err != nil {
		t.Fatal(err)
	}
	lib, err := gpu.Open(8, "NVIDIA A100-SXM4-80GB", gpu.FaultFile(faults))
	if err != nil {
		t.Fatal(err)
	}
	devs, err := gpu.Discover(lib)
	if err != nil {
		t.Fatalf("Discover with GPU 3 lost: %v", err)
	}
	if len(devs) != 8 || devs[3] != (gpu.Device{Index: 3}) || devs[4].UUID == "" {
		t.Fatalf("Discover with GPU 3 lost: %+v; want 8 GPUs, GPU 3 by its index alone", devs)
	}
	w := &gpu.Watcher{Lib: lib, Devices: devs, Interval: time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	got := w.Check()
	if checks(got) != "3 gpu-lost hardware" || got[0].Message() != "GPU 3 is gone from the bus (NVML: ERROR_GPU_IS_LOST): repair the node" {
		t.Fatalf("first poll with GPU 3 lost: %s (%+v)", checks(got), got)
	}
	if err := fakegpu.Inject(faults, fakegpu.Fault{Kind: fakegpu.Reset, GPU: 3}); err != nil {
		t.Fatal(err)
	}
	if got := w.Check(); len(got) != 0 {
		t.Errorf("after GPU 3 came back: %s", checks(got))
	}
}
