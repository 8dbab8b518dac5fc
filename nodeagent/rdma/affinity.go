package rdma

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Level is how far apart two PCI devices are, with `nvidia-smi topo -m`'s
// names, nearest first.
type Level string

const (
	// LevelPIX: through at most one PCIe switch (both hang off the same
	// switch, or one off the other's port).
	LevelPIX Level = "PIX"
	// LevelPXB: through several PCIe switches, without the host bridge.
	LevelPXB Level = "PXB"
	// LevelPHB: through a PCIe host bridge (the same root complex).
	LevelPHB Level = "PHB"
	// LevelNODE: different root complexes of one NUMA node.
	LevelNODE Level = "NODE"
	// LevelSYS: across NUMA nodes (the CPUs' interconnect).
	LevelSYS Level = "SYS"
)

// rank orders the levels, nearest first; unknown levels last.
func (l Level) rank() int {
	switch l {
	case LevelPIX:
		return 0
	case LevelPXB:
		return 1
	case LevelPHB:
		return 2
	case LevelNODE:
		return 3
	case LevelSYS:
		return 4
	}
	return 5
}

// pciDevice is a PCI function's place in the sysfs device tree.
type pciDevice struct {
	path []string // from the root complex (pci0000:00) down to the function
	numa int
}

// locate finds addr (sysfs or NVML spelling) under root/bus/pci/devices;
// ok is false when it is not there.
func locate(root, addr string) (pciDevice, bool) {
	link := filepath.Join(root, "bus", "pci", "devices", sysfsPCIAddr(addr))
	target, err := filepath.EvalSymlinks(link)
	if err != nil {
		return pciDevice{}, false
	}
	devices, err := filepath.EvalSymlinks(filepath.Join(root, "devices"))
	if err != nil {
		return pciDevice{}, false
	}
	rel, err := filepath.Rel(devices, target)
	if err != nil || strings.HasPrefix(rel, "..") {
		return pciDevice{}, false
	}
	d := pciDevice{path: strings.Split(filepath.ToSlash(rel), "/"), numa: -1}
	if s, err := readLine(filepath.Join(target, "numa_node")); err == nil {
		if n, err := strconv.Atoi(s); err == nil {
			d.numa = n
		}
	}
	return d, true
}

// sysfsPCIAddr turns NVML's bus ID (00000000:07:00.0, an 8-digit domain,
// upper case) into sysfs's (0000:07:00.0).
func sysfsPCIAddr(addr string) string {
	addr = strings.ToLower(addr)
	if dom, rest, ok := strings.Cut(addr, ":"); ok && len(dom) > 4 {
		addr = dom[len(dom)-4:] + ":" + rest
	}
	return addr
}

// distance is the level between two located devices.
func distance(a, b pciDevice) Level {
	common := 0
	for common < len(a.path) && common < len(b.path) && a.path[common] == b.path[common] {
		common++
	}
	switch {
	case common >= 2:
		// Below one root port. Each device is one hop (its switch's
		// downstream port) from a shared switch, or it is deeper.
		if len(a.path)-common <= 2 && len(b.path)-common <= 2 {
			return LevelPIX
		}
		return LevelPXB
	case common == 1:
		return LevelPHB
	case a.numa >= 0 && a.numa == b.numa:
		return LevelNODE
	}
	return LevelSYS
}

// Affinity sets each port's nearest GPUs and their level. gpus are the
// GPUs' PCI bus IDs by index (NVML's spelling is fine). A port or GPU
// missing from root/bus/pci/devices relates to nothing.
func Affinity(root string, ports []Port, gpus []string) {
	located := make([]pciDevice, len(gpus))
	found := make([]bool, len(gpus))
	for i, addr := range gpus {
		located[i], found[i] = locate(root, addr)
	}
	for pi := range ports {
		p := &ports[pi]
		p.GPUs, p.Affinity = nil, ""
		nic, ok := locate(root, p.PCIAddr)
		if !ok {
			continue
		}
		for gi := range gpus {
			if !found[gi] {
				continue
			}
			l := distance(nic, located[gi])
			switch {
			case p.Affinity == "" || l.rank() < p.Affinity.rank():
				p.GPUs, p.Affinity = []int{gi}, l
			case l == p.Affinity:
				p.GPUs = append(p.GPUs, gi)
			}
		}
	}
}
