package nodeagent

import (
	"fmt"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/internal/fakesysfs"
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
