package devcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/internal/fakesysfs"
)

// Fault drills. Each dev node keeps its fake hardware under
// Dir/agents/NAME: sys/ is its sysfs tree (RDMA NICs mlx5_0..., one per
// GPU, at least one), which its agent reads and watches as a real one
// reads /sys. InjectFault changes that hardware under the running agent,
// as a failing part would.

// Fault kinds InjectFault knows.
const (
	FaultLinkDown = "link-down" // an RDMA port loses its link
	FaultLinkUp   = "link-up"   // and gets it back
)

// nicsPerNode is how many RDMA NICs a dev node has: one per GPU, as on a
// DGX, and one on a CPU node.
func nicsPerNode(gpus int) int { return max(gpus, 1) }

// sysfsRoot is where node's fake sysfs tree is.
func sysfsRoot(dir, node string) string { return filepath.Join(dir, "agents", node, "sys") }

// InjectFault injects a fault of kind into node of the dev cluster in dir.
// nic names the RDMA port of a link fault (device or device/port; default
// mlx5_0/1).
func InjectFault(dir, node, kind, nic string) error {
	root := sysfsRoot(dir, node)
	if _, err := os.Stat(root); err != nil {
		return fmt.Errorf("no dev node %q in %s (its fake hardware would be in %s): %w", node, dir, root, cluster.ErrNotFound)
	}
	switch kind {
	case FaultLinkDown, FaultLinkUp:
		dev, port, err := parseNIC(nic)
		if err != nil {
			return err
		}
		return fakesysfs.SetPort(root, dev, port, kind == FaultLinkUp)
	}
	return fmt.Errorf("fault %q: use %s or %s: %w", kind, FaultLinkDown, FaultLinkUp, cluster.ErrInvalid)
}

// parseNIC reads "mlx5_0" or "mlx5_0/1" (default "mlx5_0/1").
func parseNIC(s string) (dev string, port int, err error) {
	if s == "" {
		return "mlx5_0", 1, nil
	}
	dev, p, found := strings.Cut(s, "/")
	if !found {
		return dev, 1, nil
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 1 || dev == "" {
		return "", 0, fmt.Errorf("NIC %q: give DEVICE or DEVICE/PORT, e.g. mlx5_0/1: %w", s, cluster.ErrInvalid)
	}
	return dev, port, nil
}
