package gpu_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
)

// Tests over the host's own NVIDIA driver. Where there is none (CI,
// laptops) they skip; on a GPU host they run the code the agent runs there
// (scripts/gpu-host-check.sh runs them).

// realGPUs opens the real NVML and lists the host's GPUs, or skips.
func realGPUs(t *testing.T) (nvml.Interface, []gpu.Device) {
	t.Helper()
	lib, err := gpu.Open(0, "")
	if errors.Is(err, gpu.ErrNoNVML) {
		t.Skipf("no NVIDIA driver here: %v", err)
	}
	if err != nil {
		t.Fatalf("Open(0): %v", err)
	}
	devs, err := gpu.Discover(lib)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if len(devs) == 0 {
		t.Skip("the NVIDIA driver is here, but no GPU")
	}
	return lib, devs
}

// TestRealGPUsPassEveryCheck: a healthy GPU fails none of the polled
// checks (a counter it does not support is skipped, not a fault), and the
// watcher runs its event set and polls without an error or an event. It
// logs what the driver answered to each probe, for the record of a host.
func TestRealGPUsPassEveryCheck(t *testing.T) {
	lib, devs := realGPUs(t)
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Fatalf("NVML init: %v", ret)
	}
	defer lib.Shutdown()
	driver, _ := lib.SystemGetDriverVersion()
	t.Logf("driver %s", driver)
	for _, d := range devs {
		h, ret := lib.DeviceGetHandleByUUID(d.UUID)
		if ret != nvml.SUCCESS {
			t.Fatalf("GPU %d (%s): handle by UUID: %v", d.Index, d.UUID, ret)
		}
		events, evRet := h.GetSupportedEventTypes()
		ecc, eccRet := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
		_, unc, pending, failed, rowRet := h.GetRemappedRows()
		retired, retRet := h.GetRetiredPagesPendingStatus()
		reasons, thrRet := h.GetCurrentClocksThrottleReasons()
		temp, tempRet := h.GetTemperature(nvml.TEMPERATURE_GPU)
		util, utilRet := h.GetUtilizationRates()
		t.Logf("GPU %d %s %q %d MiB PCI %s", d.Index, d.UUID, d.Model, d.MemoryMB, d.PCIBusID)
		t.Logf("  supported events %#x (%v); XID and double-bit ECC watched: %v", events, evRet,
			events&(nvml.EventTypeXidCriticalError|nvml.EventTypeDoubleBitEccError) != 0)
		t.Logf("  uncorrected volatile ECC %d (%v); rows remapped %d pending %v failed %v (%v); retired pages pending %v (%v)",
			ecc, eccRet, unc, pending, failed, rowRet, retired, retRet)
		t.Logf("  throttle reasons %#x (%v); temperature %d °C (%v); utilisation %d%% (%v)",
			reasons, thrRet, temp, tempRet, util.Gpu, utilRet)
	}

	w := &gpu.Watcher{Lib: lib, Devices: devs, Interval: 200 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if vs := w.Check(); len(vs) > 0 {
		t.Fatalf("healthy GPUs failed checks: %+v", vs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var levels [][]gpu.Verdict
	var events []gpu.Verdict
	if err := w.Run(ctx, func(v []gpu.Verdict) { levels = append(levels, v) }, func(v gpu.Verdict) { events = append(events, v) }); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(levels) != 1 || len(levels[0]) != 0 {
		t.Errorf("levels over 2 s = %+v, want one empty list", levels)
	}
	if len(events) != 0 {
		t.Errorf("events over 2 s = %+v, want none", events)
	}
}

// torchLoad is a Python program that keeps GPU 0 (of CUDA_VISIBLE_DEVICES)
// multiplying matrices for the seconds given as its argument.
const torchLoad = `
import sys, time, torch
a = torch.randn(4096, 4096, device="cuda")
end = time.time() + float(sys.argv[1])
while time.time() < end:
    b = a @ a
    torch.cuda.synchronize()
`

// TestRealBusyWhileComputing: Busy, the hang detector's GPU progress
// signal, says busy while a program computes on the GPU and idle once it
// has stopped. Needs python3 with a CUDA-enabled PyTorch.
func TestRealBusyWhileComputing(t *testing.T) {
	lib, devs := realGPUs(t)
	probe := exec.Command("python3", "-c", "import torch; assert torch.cuda.is_available()")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("no python3 with a CUDA PyTorch to load the GPU with: %v %s", err, out)
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Fatalf("NVML init: %v", ret)
	}
	defer lib.Shutdown()
	w := &gpu.Watcher{Lib: lib, Devices: devs, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	first := []int{devs[0].Index}

	load := exec.Command("python3", "-c", torchLoad, "8")
	load.Env = append(load.Environ(), "CUDA_VISIBLE_DEVICES="+devs[0].UUID)
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- load.Wait() }()
	sawBusy := false
	for !sawBusy {
		select {
		case err := <-done:
			t.Fatalf("the load ended (%v) before Busy said busy", err)
		case <-time.After(100 * time.Millisecond):
			sawBusy = w.Busy(first)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("the load failed: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for w.Busy(first) {
		if time.Now().After(deadline) {
			t.Fatal("Busy still says busy 5 s after the load ended")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
