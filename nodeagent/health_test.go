package nodeagent

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/internal/fakegpu"
	"github.com/phalanx-hpc/phalanx/internal/fakesysfs"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// The agent registers its RDMA ports and, through the real watcher on a
// fake sysfs tree, reports a port's link going down as a failing check in
// a heartbeat sent at once, registers the port's new state, and clears the
// problem when the link is back.
func TestLinkFaultReachesController(t *testing.T) {
	root := t.TempDir()
	var ports []rdma.Port
	h := newHarness(t, fake.New(), func(c *Config) {
		ids := make([]string, len(c.GPUs))
		for i, g := range c.GPUs {
			ids[i] = g.PCIBusID
		}
		if err := fakesysfs.Write(root, fakesysfs.Host{GPUs: ids, NICs: 4}); err != nil {
			t.Fatal(err)
		}
		var err error
		if ports, err = rdma.Discover(root, rdma.SysfsLister{Root: root}); err != nil {
			t.Fatal(err)
		}
		rdma.Affinity(root, ports, ids)
		c.NICs = ports
		c.NICWatcher = &rdma.Watcher{Root: root, Interval: 5 * time.Millisecond}
		c.HeartbeatInterval = time.Hour // only a health change sends one
	})
	lastRegistration := func() *phalanxv1.RegisterNodeRequest {
		h.srv.mu.Lock()
		defer h.srv.mu.Unlock()
		if len(h.srv.registers) == 0 {
			return nil
		}
		return h.srv.registers[len(h.srv.registers)-1]
	}
	eventually(t, 10*time.Second, func() error {
		if r := lastRegistration(); r == nil || len(r.Nics) != 4 {
			return fmt.Errorf("registration %v, want 4 NICs", r)
		}
		return nil
	})
	if nic := lastRegistration().Nics[1]; nic.Device != "mlx5_1" || nic.State != "ACTIVE" || len(nic.Gpus) != 2 || nic.Affinity != "PIX" {
		t.Fatalf("registered mlx5_1 as %v", nic)
	}

	lastHeartbeat := func() *phalanxv1.HeartbeatRequest {
		h.srv.mu.Lock()
		defer h.srv.mu.Unlock()
		if len(h.srv.heartbeats) == 0 {
			return nil
		}
		return h.srv.heartbeats[len(h.srv.heartbeats)-1]
	}
	if err := fakesysfs.SetPort(root, "mlx5_2", 1, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		hb := lastHeartbeat()
		if hb == nil || !hb.Health || len(hb.Problems) != 1 {
			return fmt.Errorf("heartbeat %v, want one problem", hb)
		}
		if p := hb.Problems[0]; p.Check != "rdma-link" || p.Message != "mlx5_2/1 DOWN (Disabled)" {
			return fmt.Errorf("problem %v", p)
		}
		if r := lastRegistration(); r.Nics[2].State != "DOWN" {
			return fmt.Errorf("mlx5_2 registered as %v, want DOWN", r.Nics[2])
		}
		return nil
	})
	if err := fakesysfs.SetPort(root, "mlx5_2", 1, true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if hb := lastHeartbeat(); !hb.Health || len(hb.Problems) != 0 {
			return fmt.Errorf("heartbeat %v, want no problem", hb)
		}
		if r := lastRegistration(); r.Nics[2].State != "ACTIVE" {
			return fmt.Errorf("mlx5_2 registered as %v, want ACTIVE", r.Nics[2])
		}
		return nil
	})
}

// The agent watches its GPUs through the real watcher over NVML's mock:
// an XID the application caused changes nothing; one that needs a reset
// is reported as an event problem until the controller says an admin
// resumed the node; an ECC error not yet reset is a problem until the GPU
// is reset.
func TestGPUFaultReachesController(t *testing.T) {
	faults := filepath.Join(t.TempDir(), "gpu-faults")
	h := newHarness(t, fake.New(), func(c *Config) {
		lib, err := gpu.Open(8, "NVIDIA A100-SXM4-80GB", gpu.FaultFile(faults))
		if err != nil {
			t.Fatal(err)
		}
		if c.GPUs, err = gpu.Discover(lib); err != nil {
			t.Fatal(err)
		}
		c.GPUWatcher = &gpu.Watcher{Lib: lib, Devices: c.GPUs, Interval: 20 * time.Millisecond, Log: testLogger(t)}
		c.HeartbeatInterval = 50 * time.Millisecond
	})
	inject := func(f fakegpu.Fault) {
		t.Helper()
		if err := fakegpu.Inject(faults, f); err != nil {
			t.Fatal(err)
		}
	}
	// problems is the last heartbeat's list, as "check|message|event".
	problems := func() []string {
		h.srv.mu.Lock()
		defer h.srv.mu.Unlock()
		if len(h.srv.heartbeats) == 0 {
			return nil
		}
		var out []string
		for _, p := range h.srv.heartbeats[len(h.srv.heartbeats)-1].Problems {
			if p.Since == nil {
				t.Errorf("problem %v has no since", p)
			}
			out = append(out, fmt.Sprintf("%s|%s|%v", p.Check, p.Message, p.Event))
		}
		return out
	}
	want := func(want ...string) {
		t.Helper()
		eventually(t, 10*time.Second, func() error {
			if got := problems(); !slices.Equal(got, want) {
				return fmt.Errorf("problems %q, want %q", got, want)
			}
			return nil
		})
	}
	inject(fakegpu.Fault{Kind: fakegpu.XID, GPU: 3, XID: 13})
	inject(fakegpu.Fault{Kind: fakegpu.XID, GPU: 2, XID: 48})
	xid48 := "gpu-xid|GPU 2 XID 48 (double bit ECC error): reset the GPU|true"
	want(xid48)

	inject(fakegpu.Fault{Kind: fakegpu.ECC, GPU: 1})
	want("gpu-ecc|GPU 1 has 1 uncorrectable ECC errors since its last reset (1 in its life): reset the GPU|false",
		"gpu-row-remap|GPU 1 has a row remap pending (1 rows remapped for uncorrectable errors): reset the GPU|false", xid48)
	inject(fakegpu.Fault{Kind: fakegpu.Reset, GPU: 1})
	want(xid48)

	h.srv.mu.Lock()
	h.srv.resumed = timestamppb.Now()
	h.srv.mu.Unlock()
	want()
	inject(fakegpu.Fault{Kind: fakegpu.Lost, GPU: 0}) // after the resume: reported
	want("gpu-lost|GPU 0 is gone from the bus (NVML: ERROR_GPU_IS_LOST): repair the node|false",
		"gpu-xid|GPU 0 XID 79 (GPU has fallen off the bus): repair the node|true")
}
