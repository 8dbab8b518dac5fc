// Package fakesysfs writes the sysfs tree of a host that does not exist:
// RDMA NICs (class/infiniband) and the PCIe tree that places them and the
// GPUs (devices/, bus/pci/devices), as package nodeagent/rdma reads a real
// host's /sys. Tests, phalanx-agent --fake-nics and `phx dev` nodes use it,
// and SetPort injects link faults into it. It imports the standard library
// only, so that phx (which runs `phx dev fault`) stays free of the agent's
// hardware code.
package fakesysfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/internal/durable"
)

// Host is the hardware of a fake sysfs tree: what tests and `phx dev`
// nodes have instead of NICs.
type Host struct {
	// GPUs are the GPUs' PCI bus IDs by index (NVML's spelling is fine),
	// so that Affinity relates them to the NICs.
	GPUs []string
	// NICs is the number of RDMA devices, mlx5_0 on, one port each.
	NICs int
	// LinkLayer is InfiniBand (the default) or Ethernet (RoCE: each port
	// gets a netdev, roce0 on).
	LinkLayer string
	// Rate is each port's rate (default "200 Gb/sec (4X HDR)").
	Rate string
}

// MaxDevices bounds a fake host's GPUs and its NICs, each.
const MaxDevices = 32

// Write writes h under root as a host's /sys: a DGX-like PCIe tree
// (each PCIe switch under its own root port holding its share of the GPUs
// and NICs, the first half of the switches on NUMA node 0 and the rest on
// node 1), with every port ACTIVE. It refuses a root that holds a tree
// already, so that a restarted dev node keeps its injected faults.
func Write(root string, h Host) error {
	if h.NICs < 0 || h.NICs > MaxDevices || len(h.GPUs) > MaxDevices {
		return fmt.Errorf("fake RDMA host: %d NICs and %d GPUs: at most %d each: %w", h.NICs, len(h.GPUs), MaxDevices, cluster.ErrInvalid)
	}
	if h.LinkLayer == "" {
		h.LinkLayer = "InfiniBand"
	}
	if h.LinkLayer != "InfiniBand" && h.LinkLayer != "Ethernet" {
		return fmt.Errorf("fake RDMA host: link layer %q: want InfiniBand or Ethernet: %w", h.LinkLayer, cluster.ErrInvalid)
	}
	if h.Rate == "" {
		h.Rate = "200 Gb/sec (4X HDR)"
	}
	if _, err := os.Stat(filepath.Join(root, "devices")); err == nil {
		return nil
	}
	slots := max(min(len(h.GPUs), h.NICs), 1)
	w := fakeWriter{root: root, ports: map[int]int{}}
	for i, addr := range h.GPUs {
		w.endpoint(slots, i*slots/len(h.GPUs), pciAddr(addr))
	}
	for j := 0; j < h.NICs; j++ {
		dir := w.endpoint(slots, j*slots/h.NICs, fmt.Sprintf("0000:%02x:00.0", 0xc0+j))
		w.nic(dir, j, h)
	}
	if h.NICs > 0 {
		w.file(filepath.Join("class", "misc", "rdma_cm", "dev"), "10:58")
	}
	return w.err
}

// fakeWriter writes files until the first error.
type fakeWriter struct {
	root  string
	ports map[int]int // downstream ports used, by slot
	err   error
}

// endpoint places a PCI function behind slot's switch and returns its
// directory.
func (w *fakeWriter) endpoint(slots, slot int, addr string) string {
	complex, numa := "pci0000:00", 0
	if slots > 1 && slot >= slots/2 {
		complex, numa = "pci0000:80", 1
	}
	rootPort := fmt.Sprintf("%s:%02x.0", complex[3:], slot+1)
	up := fmt.Sprintf("0000:%02x:00.0", 0x40+2*slot)
	down := fmt.Sprintf("0000:%02x:%02x.0", 0x41+2*slot, w.ports[slot])
	w.ports[slot]++
	rel := filepath.Join("devices", complex, rootPort, up, down, addr)
	w.file(filepath.Join(rel, "numa_node"), strconv.Itoa(numa))
	w.symlink(filepath.Join("bus", "pci", "devices", addr), filepath.Join("..", "..", "..", rel))
	return rel
}

// nic writes RDMA device j, whose PCI function is at dir.
func (w *fakeWriter) nic(dir string, j int, h Host) {
	name := fmt.Sprintf("mlx5_%d", j)
	ib := filepath.Join(dir, "infiniband", name)
	w.symlink(filepath.Join(ib, "device"), filepath.Join("..", "..", "..", filepath.Base(dir)))
	w.symlink(filepath.Join("class", "infiniband", name), filepath.Join("..", "..", ib))
	// Its verbs character device, as ib_uverbs registers it.
	verbs := filepath.Join(dir, "infiniband_verbs", fmt.Sprintf("uverbs%d", j))
	w.file(filepath.Join(verbs, "dev"), fmt.Sprintf("231:%d", 192+j))
	w.file(filepath.Join(verbs, "ibdev"), name)
	port := filepath.Join(ib, "ports", "1")
	w.file(filepath.Join(port, "rate"), h.Rate)
	w.file(filepath.Join(port, "link_layer"), h.LinkLayer)
	if h.LinkLayer == "Ethernet" {
		w.file(filepath.Join(port, "gid_attrs", "ndevs", "0"), fmt.Sprintf("roce%d", j))
	}
	if w.err == nil {
		w.err = SetPort(w.root, name, 1, true)
	}
}

func (w *fakeWriter) file(rel, content string) {
	if w.err != nil {
		return
	}
	path := filepath.Join(w.root, rel)
	if w.err = os.MkdirAll(filepath.Dir(path), 0o755); w.err == nil {
		w.err = os.WriteFile(path, []byte(content+"\n"), 0o644)
	}
}

func (w *fakeWriter) symlink(rel, target string) {
	if w.err != nil {
		return
	}
	path := filepath.Join(w.root, rel)
	if w.err = os.MkdirAll(filepath.Dir(path), 0o755); w.err == nil {
		w.err = os.Symlink(target, path)
	}
}

// SetPort brings a port of a fake tree up (ACTIVE, LinkUp) or down
// (DOWN, Disabled): `phx dev fault link-down` and tests inject link faults
// with it. Each file is replaced whole, so a reader never sees half of one.
func SetPort(root, dev string, port int, up bool) error {
	dir := filepath.Join(root, "class", "infiniband", dev, "ports", strconv.Itoa(port))
	if _, err := os.Stat(filepath.Join(dir, "link_layer")); err != nil {
		return fmt.Errorf("no RDMA port %s/%d in the fake tree %s: %w", dev, port, root, cluster.ErrNotFound)
	}
	state, phys := "1: DOWN", "3: Disabled"
	if up {
		state, phys = "4: ACTIVE", "5: LinkUp"
	}
	if err := durable.WriteFile(filepath.Join(dir, "state"), []byte(state+"\n"), 0o644); err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, "phys_state"), []byte(phys+"\n"), 0o644)
}

// pciAddr turns NVML's bus ID (00000000:07:00.0, an 8-digit domain, upper
// case) into sysfs's (0000:07:00.0).
func pciAddr(addr string) string {
	addr = strings.ToLower(addr)
	if dom, rest, ok := strings.Cut(addr, ":"); ok && len(dom) > 4 {
		addr = dom[len(dom)-4:] + ":" + rest
	}
	return addr
}
