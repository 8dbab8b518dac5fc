// Package gpu discovers a host's NVIDIA GPUs through NVML
// (github.com/NVIDIA/go-nvml), and keeps NVML inside this package: the rest
// of the agent sees only []Device.
//
// The same Discover code runs over the real library and over go-nvml's
// dgxa100 mock, which Open returns when asked for fake GPUs, so a laptop or
// CI machine without GPUs exercises exactly the code a GPU host runs.
//
// The real library is dlopened when NVML is initialised. On a host without
// the NVIDIA driver, Open returns an error wrapping ErrNoNVML; the caller
// decides whether that means "zero GPUs" (a CPU-only node) or a fault.
package gpu

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// ErrNoNVML means the NVML library (libnvidia-ml.so.1) could not be loaded.
var ErrNoNVML = fmt.Errorf("NVML library libnvidia-ml.so.1 not found (install the NVIDIA driver, or use --fake-gpus N): %w", cluster.ErrNotFound)

// Device is one GPU as the agent registers it.
type Device struct {
	Index    int    // NVML index, the number CUDA_VISIBLE_DEVICES uses
	UUID     string // GPU-xxxxxxxx-...
	Model    string // e.g. "NVIDIA A100-SXM4-80GB"
	MemoryMB int64  // total framebuffer memory
	PCIBusID string // e.g. "00000000:07:00.0"
}

// Option configures the fake GPUs Open returns.
type Option func(*options)

type options struct {
	faultFile string
	log       *slog.Logger
}

// FaultFile makes the fake GPUs play the faults appended to path (package
// internal/fakegpu) while they run.
func FaultFile(path string) Option { return func(o *options) { o.faultFile = path } }

// Logger is where the fake GPUs say that a fault was malformed.
func Logger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// Open returns the NVML interface to discover and watch GPUs with.
// fakeCount > 0 gives a mock reporting fakeCount GPUs named fakeModel;
// fakeCount == 0 gives the real library, after checking that it loads (an
// error wrapping ErrNoNVML when it does not).
func Open(fakeCount int, fakeModel string, opts ...Option) (nvml.Interface, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case fakeCount < 0:
		return nil, fmt.Errorf("fake GPU count %d: %w", fakeCount, cluster.ErrInvalid)
	case fakeCount > 0:
		return newMock(fakeCount, fakeModel, o.faultFile, o.log), nil
	}
	lib := nvml.New()
	ret := lib.Init()
	if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
		return nil, ErrNoNVML
	}
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML init: %v", ret)
	}
	if ret := lib.Shutdown(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML shutdown: %v", ret)
	}
	return lib, nil
}

// Discover lists the GPUs lib reports, by index. It initialises NVML and
// shuts it down again before returning.
func Discover(lib nvml.Interface) (devs []Device, err error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, ErrNoNVML
		}
		return nil, fmt.Errorf("NVML init: %v", ret)
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS {
			err = errors.Join(err, fmt.Errorf("NVML shutdown: %v", ret))
		}
	}()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %v", ret)
	}
	devs = make([]Device, 0, n)
	var lost error
	for i := 0; i < n; i++ {
		d, err := describe(lib, i)
		if errors.Is(err, errLost) {
			// Fallen off the bus (a restart after an XID 79): it is
			// registered by its index alone, and the watcher's first poll
			// finds it lost and drains the node, rather than the agent
			// failing to start and the node going DOWN, not responding.
			lost = cmp.Or(lost, err)
			devs = append(devs, Device{Index: i})
			continue
		}
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	if lost != nil && !slices.ContainsFunc(devs, func(d Device) bool { return d.UUID != "" }) {
		return nil, lost // none answers: NVML itself is at fault
	}
	return devs, nil
}

// errLost: NVML answers that the GPU has fallen off the bus.
var errLost = errors.New("ERROR_GPU_IS_LOST")

// describe reads one device's identity.
func describe(lib nvml.Interface, i int) (Device, error) {
	h, ret := lib.DeviceGetHandleByIndex(i)
	if ret == nvml.ERROR_GPU_IS_LOST {
		return Device{}, fmt.Errorf("GPU %d: handle: %w", i, errLost)
	}
	if ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("GPU %d: handle: %v", i, ret)
	}
	d := Device{Index: i}
	if d.Model, ret = h.GetName(); ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("GPU %d: name: %v", i, ret)
	}
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("GPU %d: UUID: %v", i, ret)
	}
	mem, ret := h.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("GPU %d: memory: %v", i, ret)
	}
	d.MemoryMB = int64(mem.Total / (1 << 20))
	pci, ret := h.GetPciInfo()
	if ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("GPU %d: PCI info: %v", i, ret)
	}
	d.PCIBusID = cString(pci.BusId[:])
	return d, nil
}

// cString converts a NUL-terminated C char array.
func cString(b []uint8) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
