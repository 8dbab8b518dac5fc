package gpu_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
)

func TestDiscoverFake(t *testing.T) {
	for _, tc := range []struct {
		n        int
		model    string
		wantName string
		wantMB   int64
	}{
		{1, "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", 80 * 1024},
		{8, "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", 80 * 1024},
		{16, "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", 40 * 1024},
		{3, "", "Mock NVIDIA A100-SXM4-40GB", 40 * 1024},
		{2, "Tesla T4", "Tesla T4", 40960}, // no size in the name: the mock's 40 GiB
	} {
		t.Run(fmt.Sprintf("%d-%s", tc.n, tc.model), func(t *testing.T) {
			lib, err := gpu.Open(tc.n, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			devs, err := gpu.Discover(lib)
			if err != nil {
				t.Fatal(err)
			}
			if len(devs) != tc.n {
				t.Fatalf("got %d devices, want %d", len(devs), tc.n)
			}
			uuids := map[string]bool{}
			buses := map[string]bool{}
			for i, d := range devs {
				if d.Index != i || d.Model != tc.wantName || d.MemoryMB != tc.wantMB {
					t.Errorf("device %d = %+v; want index %d, model %q, %d MB", i, d, i, tc.wantName, tc.wantMB)
				}
				if want := fmt.Sprintf("00000000:%02x:00.0", i); d.PCIBusID != want {
					t.Errorf("device %d PCI bus %q, want %q", i, d.PCIBusID, want)
				}
				if len(d.UUID) < len("GPU-")+36 || d.UUID[:4] != "GPU-" || uuids[d.UUID] {
					t.Errorf("device %d UUID %q malformed or repeated", i, d.UUID)
				}
				uuids[d.UUID] = true
				buses[d.PCIBusID] = true
			}
			if len(buses) != tc.n {
				t.Errorf("PCI bus IDs not unique: %v", buses)
			}
		})
	}
}

func TestOpenNegative(t *testing.T) {
	if _, err := gpu.Open(-1, "x"); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("Open(-1) = %v, want ErrInvalid", err)
	}
}

// TestOpenReal checks the real library: on a host without the driver the
// error must say so (ErrNoNVML); on a GPU host Discover must find at least
// one GPU with a UUID.
func TestOpenReal(t *testing.T) {
	lib, err := gpu.Open(0, "")
	if errors.Is(err, gpu.ErrNoNVML) {
		if !errors.Is(err, cluster.ErrNotFound) {
			t.Errorf("ErrNoNVML does not wrap ErrNotFound")
		}
		t.Logf("no NVML here: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("Open(0): %v", err)
	}
	devs, err := gpu.Discover(lib)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	for _, d := range devs {
		t.Logf("%+v", d)
		if d.UUID == "" || d.Model == "" || d.MemoryMB <= 0 {
			t.Errorf("incomplete device %+v", d)
		}
	}
}

func TestDiscoverErrors(t *testing.T) {
	fail := func(f func(*mock.Interface)) *mock.Interface {
		m := &mock.Interface{
			InitFunc:           func() nvml.Return { return nvml.SUCCESS },
			ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
			DeviceGetCountFunc: func() (int, nvml.Return) { return 1, nvml.SUCCESS },
			DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) {
				return nil, nvml.ERROR_GPU_IS_LOST
			},
		}
		f(m)
		return m
	}
	for name, lib := range map[string]*mock.Interface{
		"no library": fail(func(m *mock.Interface) { m.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND } }),
		"init":       fail(func(m *mock.Interface) { m.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED } }),
		"count": fail(func(m *mock.Interface) {
			m.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
		}),
		"lost gpu": fail(func(*mock.Interface) {}),
	} {
		t.Run(name, func(t *testing.T) {
			devs, err := gpu.Discover(lib)
			if err == nil || devs != nil {
				t.Fatalf("Discover = %v, %v; want an error", devs, err)
			}
			if name == "no library" && !errors.Is(err, gpu.ErrNoNVML) {
				t.Errorf("err = %v, want ErrNoNVML", err)
			}
			if name != "no library" && name != "init" && len(lib.ShutdownCalls()) != 1 {
				t.Errorf("Shutdown called %d times after a failed discovery, want 1", len(lib.ShutdownCalls()))
			}
		})
	}
}
