// Package rdma finds a host's RDMA NICs (InfiniBand HCAs and RoCE ports)
// and watches their links. It keeps netlink and sysfs inside this package:
// the rest of the agent sees []Port.
//
// # Where it looks
//
// Everything is read under a sysfs root: /sys on a real host, a fake tree
// (package internal/fakesysfs) in tests and on `phx dev` nodes. For each
// device under class/infiniband it reads, per port:
//
//	ports/N/state        "4: ACTIVE"            logical state
//	ports/N/phys_state   "5: LinkUp"            physical state
//	ports/N/rate         "200 Gb/sec (4X HDR)"
//	ports/N/link_layer   "InfiniBand" or "Ethernet" (RoCE)
//	ports/N/gid_attrs/ndevs/0                   RoCE: the Ethernet netdev
//
// and, for the device, its PCI function (the device link's target name) and
// NUMA node (device/numa_node). Which devices exist comes from a Lister:
// on a real host the kernel's RDMA netlink family (NetlinkLister, through
// github.com/vishvananda/netlink), which also names devices sysfs may hide
// in another network namespace's view; elsewhere, and when the kernel has
// no RDMA netlink, the class/infiniband directory (SysfsLister).
//
// # GPU affinity
//
// Affinity relates each NIC to the GPUs nearest to it on the PCIe tree,
// with the levels `nvidia-smi topo -m` prints (see Level): NCCL uses a NIC
// that shares a PCIe switch with the GPU (PIX) at full GPUDirect RDMA
// speed, and a far one (SYS) through host memory.
//
// # Watching
//
// Watcher polls every port's state files (a port going down is seen within
// one interval, 1 s by default) and, on a real host, also wakes on netlink
// link updates of the RoCE netdevs, so those are seen at once.
package rdma

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Port is one port of an RDMA device, as the agent registers it.
type Port struct {
	Device    string // kernel name, e.g. mlx5_0
	Port      int    // port number, from 1
	State     string // logical state: ACTIVE, DOWN, INIT, ARMED, ...
	PhysState string // physical state: LinkUp, Disabled, Polling, ...
	Rate      string // e.g. "200 Gb/sec (4X HDR)"
	LinkLayer string // InfiniBand or Ethernet (RoCE)
	Netdev    string // RoCE: the Ethernet interface; "" for InfiniBand
	PCIAddr   string // PCI function, e.g. 0000:0c:00.0
	NUMANode  int    // -1 when unknown
	// GPUs are the indexes of the GPUs nearest to this NIC, at Affinity.
	GPUs     []int
	Affinity Level
}

// Name is "device/port", e.g. mlx5_0/1.
func (p Port) Name() string { return p.Device + "/" + strconv.Itoa(p.Port) }

// Up reports whether the port can carry traffic: ACTIVE, physically up.
func (p Port) Up() bool { return p.State == "ACTIVE" && p.PhysState == "LinkUp" }

// Lister names the RDMA devices of the host.
type Lister interface {
	Devices() ([]string, error)
}

// SysfsLister lists the devices under Root/class/infiniband.
type SysfsLister struct{ Root string }

var _ Lister = SysfsLister{}

// Devices lists the device directories, sorted; none when the directory
// does not exist (no RDMA driver loaded).
func (l SysfsLister) Devices() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(l.Root, "class", "infiniband"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// Discover lists every port of every device l names, read under root.
func Discover(root string, l Lister) ([]Port, error) {
	devs, err := l.Devices()
	if err != nil {
		return nil, fmt.Errorf("RDMA devices: %w", err)
	}
	var ports []Port
	for _, dev := range devs {
		p, err := devicePorts(root, dev)
		if err != nil {
			return nil, err
		}
		ports = append(ports, p...)
	}
	return ports, nil
}

// devicePorts reads one device's ports.
func devicePorts(root, dev string) ([]Port, error) {
	dir := filepath.Join(root, "class", "infiniband", dev)
	entries, err := os.ReadDir(filepath.Join(dir, "ports"))
	if err != nil {
		return nil, fmt.Errorf("RDMA device %s: %w", dev, err)
	}
	pci, numa := deviceLocation(dir)
	var ports []Port
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 1 {
			continue // not a port directory
		}
		p := Port{Device: dev, Port: n, PCIAddr: pci, NUMANode: numa}
		if err := p.read(root); err != nil {
			return nil, err
		}
		ports = append(ports, p)
	}
	sort.Slice(ports, func(i, k int) bool { return ports[i].Port < ports[k].Port })
	return ports, nil
}

// portDir is where the port's state files are.
func (p Port) portDir(root string) string {
	return filepath.Join(root, "class", "infiniband", p.Device, "ports", strconv.Itoa(p.Port))
}

// read fills in the port's link state, rate, link layer and netdev.
func (p *Port) read(root string) error {
	dir := p.portDir(root)
	if err := p.readState(root); err != nil {
		return err
	}
	var err error
	if p.Rate, err = readLine(filepath.Join(dir, "rate")); err != nil {
		return fmt.Errorf("RDMA port %s: %w", p.Name(), err)
	}
	if p.LinkLayer, err = readLine(filepath.Join(dir, "link_layer")); err != nil {
		return fmt.Errorf("RDMA port %s: %w", p.Name(), err)
	}
	if p.LinkLayer == "Ethernet" {
		// The netdev of GID 0; absent when the port has none bound.
		p.Netdev, _ = readLine(filepath.Join(dir, "gid_attrs", "ndevs", "0"))
	}
	return nil
}

// readState reads the port's logical and physical state.
func (p *Port) readState(root string) error {
	dir := p.portDir(root)
	st, err := readLine(filepath.Join(dir, "state"))
	if err != nil {
		return fmt.Errorf("RDMA port %s: %w", p.Name(), err)
	}
	phys, err := readLine(filepath.Join(dir, "phys_state"))
	if err != nil {
		return fmt.Errorf("RDMA port %s: %w", p.Name(), err)
	}
	p.State, p.PhysState = stateName(st), stateName(phys)
	return nil
}

// stateName drops the number of a sysfs state ("4: ACTIVE" → ACTIVE).
func stateName(s string) string {
	if _, name, ok := strings.Cut(s, ":"); ok {
		return strings.TrimSpace(name)
	}
	return strings.TrimSpace(s)
}

// deviceLocation returns the device's PCI function and NUMA node (-1 when
// unknown: a virtual device such as rxe, or a kernel that does not say).
func deviceLocation(dir string) (pci string, numa int) {
	numa = -1
	if target, err := os.Readlink(filepath.Join(dir, "device")); err == nil {
		pci = filepath.Base(target)
	}
	if s, err := readLine(filepath.Join(dir, "device", "numa_node")); err == nil {
		if n, err := strconv.Atoi(s); err == nil {
			numa = n
		}
	}
	return pci, numa
}

// readLine reads a one-line sysfs file, without its newline.
func readLine(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s: %w", path, cluster.ErrNotFound)
		}
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
