package rdma_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/internal/fakesysfs"
	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
)

// gpuIDs spells GPU bus IDs as NVML does.
func gpuIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("00000000:%02X:00.0", 0x07+8*i)
	}
	return ids
}

func fakeHost(t *testing.T, h fakesysfs.Host) string {
	t.Helper()
	root := t.TempDir()
	if err := fakesysfs.Write(root, h); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestDiscoverInfiniBand(t *testing.T) {
	root := fakeHost(t, fakesysfs.Host{GPUs: gpuIDs(8), NICs: 8})
	ports, err := rdma.Discover(root, rdma.SysfsLister{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 8 {
		t.Fatalf("%d ports, want 8: %+v", len(ports), ports)
	}
	p := ports[3]
	want := rdma.Port{Device: "mlx5_3", Port: 1, State: "ACTIVE", PhysState: "LinkUp", Rate: "200 Gb/sec (4X HDR)",
		LinkLayer: "InfiniBand", PCIAddr: "0000:c3:00.0", NUMANode: 0}
	if p.Name() != "mlx5_3/1" || !p.Up() || p.Device != want.Device || p.State != want.State || p.PhysState != want.PhysState ||
		p.Rate != want.Rate || p.LinkLayer != want.LinkLayer || p.PCIAddr != want.PCIAddr || p.NUMANode != 0 || p.Netdev != "" {
		t.Fatalf("port 3 = %+v, want %+v", p, want)
	}
	if ports[7].NUMANode != 1 {
		t.Errorf("mlx5_7 on NUMA node %d, want 1 (second half of the switches)", ports[7].NUMANode)
	}
}

func TestDiscoverRoCE(t *testing.T) {
	root := fakeHost(t, fakesysfs.Host{NICs: 2, LinkLayer: "Ethernet", Rate: "100 Gb/sec (2X HDR)"})
	ports, err := rdma.Discover(root, rdma.SysfsLister{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 2 || ports[1].Netdev != "roce1" || ports[1].LinkLayer != "Ethernet" || ports[1].Rate != "100 Gb/sec (2X HDR)" {
		t.Fatalf("ports = %+v", ports)
	}
}

func TestDiscoverNoRDMA(t *testing.T) {
	root := t.TempDir()
	ports, err := rdma.Discover(root, rdma.SysfsLister{Root: root})
	if err != nil || len(ports) != 0 {
		t.Fatalf("a host without class/infiniband: %v, %v; want no ports, no error", ports, err)
	}
}

// A device the lister names but sysfs lacks is an error that names it.
func TestDiscoverMissingDevice(t *testing.T) {
	root := t.TempDir()
	_, err := rdma.Discover(root, listOf{"mlx5_9"})
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want one wrapping ErrNotExist", err)
	}
}

type listOf []string

func (l listOf) Devices() ([]string, error) { return l, nil }

func TestAffinity(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gpus     int
		nics     int
		port     int
		wantGPUs []int
		want     rdma.Level
	}{
		{"one NIC per GPU", 8, 8, 5, []int{5}, rdma.LevelPIX},
		{"a NIC per GPU pair", 8, 4, 1, []int{2, 3}, rdma.LevelPIX},
		{"more NICs than GPUs", 2, 4, 3, []int{1}, rdma.LevelPIX},
		// Two switches on one root complex each: NIC 0 shares one with GPU 0.
		{"two of each", 2, 2, 0, []int{0}, rdma.LevelPIX},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := gpuIDs(tc.gpus)
			root := fakeHost(t, fakesysfs.Host{GPUs: ids, NICs: tc.nics})
			ports, err := rdma.Discover(root, rdma.SysfsLister{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			rdma.Affinity(root, ports, ids)
			p := ports[tc.port]
			if !slices.Equal(p.GPUs, tc.wantGPUs) || p.Affinity != tc.want {
				t.Fatalf("%s: GPUs %v at %s, want %v at %s", p.Name(), p.GPUs, p.Affinity, tc.wantGPUs, tc.want)
			}
		})
	}
}

// The levels between devices that share no switch: the same root complex
// (PHB), another one on the same NUMA node (NODE), another NUMA node (SYS).
func TestAffinityLevels(t *testing.T) {
	root := t.TempDir()
	dev := func(path string, numa int) {
		dir := filepath.Join(root, "devices", path)
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "numa_node"), []byte(fmt.Sprintln(numa)), 0o644))
		link := filepath.Join(root, "bus", "pci", "devices", filepath.Base(path))
		must(t, os.MkdirAll(filepath.Dir(link), 0o755))
		must(t, os.Symlink(filepath.Join("..", "..", "..", "devices", path), link))
	}
	dev("pci0000:00/0000:00:01.0/0000:10:00.0", 0)                           // NIC
	dev("pci0000:00/0000:00:02.0/0000:20:00.0", 0)                           // GPU 0: same root complex
	dev("pci0000:40/0000:40:01.0/0000:41:00.0", 0)                           // GPU 1: same NUMA node
	dev("pci0000:80/0000:80:01.0/0000:81:00.0", 1)                           // GPU 2: other NUMA node
	dev("pci0000:00/0000:00:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0", 0) // GPU 3: under 2 more switches
	ports := []rdma.Port{{Device: "mlx5_0", Port: 1, PCIAddr: "0000:10:00.0"}}
	for _, tc := range []struct {
		gpu  string
		want rdma.Level
	}{
		{"0000:20:00.0", rdma.LevelPHB}, {"00000000:41:00.0", rdma.LevelNODE}, {"0000:81:00.0", rdma.LevelSYS},
		{"0000:13:00.0", rdma.LevelPXB}, {"0000:99:00.0", ""},
	} {
		rdma.Affinity(root, ports, []string{tc.gpu})
		if ports[0].Affinity != tc.want {
			t.Errorf("NIC to %s: %q, want %q", tc.gpu, ports[0].Affinity, tc.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFakeRefusesBadHost(t *testing.T) {
	for _, h := range []fakesysfs.Host{{NICs: -1}, {NICs: 33}, {NICs: 1, LinkLayer: "Fibre"}} {
		if err := fakesysfs.Write(t.TempDir(), h); !errors.Is(err, cluster.ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", h, err)
		}
	}
	if err := fakesysfs.SetPort(t.TempDir(), "mlx5_0", 1, false); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("a port of no tree: err = %v, want ErrNotFound", err)
	}
}

// A fake tree written again keeps its state (a restarted dev node keeps
// its injected faults).
func TestFakeKeepsState(t *testing.T) {
	root := fakeHost(t, fakesysfs.Host{NICs: 1})
	must(t, fakesysfs.SetPort(root, "mlx5_0", 1, false))
	must(t, fakesysfs.Write(root, fakesysfs.Host{NICs: 1}))
	ports, err := rdma.Discover(root, rdma.SysfsLister{Root: root})
	if err != nil || ports[0].Up() {
		t.Fatalf("ports %+v, %v: want mlx5_0/1 still down", ports, err)
	}
}

func TestWatcherSeesLinkChanges(t *testing.T) {
	root := fakeHost(t, fakesysfs.Host{NICs: 2})
	ports, err := rdma.Discover(root, rdma.SysfsLister{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := make(chan []rdma.Port, 8)
	w := &rdma.Watcher{Root: root, Interval: 10 * time.Millisecond}
	go w.Run(ctx, ports, func(p []rdma.Port) { changes <- p })

	next := func() []rdma.Port {
		t.Helper()
		select {
		case p := <-changes:
			return p
		case <-time.After(10 * time.Second):
			t.Fatal("no change reported")
			return nil
		}
	}
	// settled skips the readings taken between the writes of a port's
	// state and phys_state (which the kernel does not change at one
	// instant either).
	settled := func(p []rdma.Port) []rdma.Port {
		for (p[1].State == "ACTIVE") != (p[1].PhysState == "LinkUp") {
			p = next()
		}
		return p
	}
	must(t, fakesysfs.SetPort(root, "mlx5_1", 1, false))
	if p := settled(next()); p[1].Up() || p[1].State != "DOWN" || p[1].PhysState != "Disabled" || !p[0].Up() || p[1].Rate == "" {
		t.Fatalf("after link-down: %+v", p)
	}
	must(t, fakesysfs.SetPort(root, "mlx5_1", 1, true))
	if p := settled(next()); !p[1].Up() {
		t.Fatalf("after link-up: %+v", p)
	}
	must(t, os.RemoveAll(filepath.Join(root, "class", "infiniband", "mlx5_0")))
	if p := next(); p[0].State != rdma.StateMissing || p[0].Up() {
		t.Fatalf("after the device vanished: %+v", p)
	}
	select {
	case p := <-changes:
		t.Fatalf("a change reported with nothing changed: %+v", p)
	case <-time.After(50 * time.Millisecond):
	}
}

// The real lister on this host: the kernel's RDMA netlink family, or, on
// a kernel without it, the fallback.
func TestNetlinkLister(t *testing.T) {
	devs, err := rdma.NetlinkLister{Fallback: listOf{"fallback"}}.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(devs, []string{"fallback"}) {
		t.Log("this kernel has no RDMA netlink: the fallback answered")
		return
	}
	sys, err := rdma.SysfsLister{Root: "/sys"}.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if !slices.Contains(sys, d) {
			t.Errorf("netlink names %s, which /sys/class/infiniband (%v) lacks", d, sys)
		}
	}
}
