package devcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/internal/fakegpu"
	"github.com/phalanx-hpc/phalanx/internal/fakesysfs"
)

// Fault drills. Each dev node keeps its fake hardware under
// Dir/agents/NAME: sys/ is its sysfs tree (RDMA NICs mlx5_0..., one per
// GPU, at least one), which its agent reads and watches as a real one
// reads /sys; gpu-faults is the fault file its fake GPUs play (package
// internal/fakegpu). InjectFault changes that hardware under the running
// agent, as a failing part would.

// Fault kinds InjectFault knows. xid and temperature take a value:
// xid=79, temperature=95.
const (
	FaultLinkDown    = "link-down"   // an RDMA port loses its link
	FaultLinkUp      = "link-up"     // and gets it back
	FaultXID         = "xid"         // a GPU raises an XID
	FaultECC         = "ecc"         // a GPU has an uncorrectable memory error
	FaultGPULost     = "gpu-lost"    // a GPU falls off the bus
	FaultTemperature = "temperature" // a GPU heats up (or cools down) to C °C
	FaultGPUReset    = "gpu-reset"   // nvidia-smi -r: the GPU's faults clear
	FaultHealthFail  = "health-fail" // the node's health program fails
	FaultHealthPass  = "health-pass" // and passes again
)

// faultKinds lists the kinds for error messages.
const faultKinds = "link-down, link-up, xid=N, ecc, gpu-lost, temperature=C, gpu-reset, health-fail or health-pass"

// Where says which part a fault hits: the RDMA port of a link fault
// (DEVICE or DEVICE/PORT; default mlx5_0/1), the GPU of a GPU fault (NVML
// index, default 0).
type Where struct {
	NIC string
	GPU int
}

// nicsPerNode is how many RDMA NICs a dev node has: one per GPU, as on a
// DGX, and one on a CPU node.
func nicsPerNode(gpus int) int { return max(gpus, 1) }

// sysfsRoot is where node's fake sysfs tree is.
func sysfsRoot(dir, node string) string { return filepath.Join(dir, "agents", node, "sys") }

// gpuFaults is node's fake GPUs' fault file.
func gpuFaults(dir, node string) string { return filepath.Join(dir, "agents", node, "gpu-faults") }

// InjectFault injects a fault of kind into node of the dev cluster in dir,
// on the part where names.
func InjectFault(dir, node, kind string, where Where) error {
	root := sysfsRoot(dir, node)
	if _, err := os.Stat(root); err != nil {
		return fmt.Errorf("no dev node %q in %s (its fake hardware would be in %s): %w", node, dir, root, cluster.ErrNotFound)
	}
	name, value, hasValue := strings.Cut(kind, "=")
	n, err := strconv.Atoi(value)
	switch {
	case (name == FaultXID || name == FaultTemperature) != hasValue:
		return fmt.Errorf("fault %q: use %s: %w", kind, faultKinds, cluster.ErrInvalid)
	case hasValue && err != nil:
		return fmt.Errorf("fault %q: %s takes a whole number: %w", kind, name, cluster.ErrInvalid)
	}
	gpu := fakegpu.Fault{GPU: where.GPU}
	switch name {
	case FaultLinkDown, FaultLinkUp:
		dev, port, err := parseNIC(where.NIC)
		if err != nil {
			return err
		}
		return fakesysfs.SetPort(root, dev, port, name == FaultLinkUp)
	case FaultHealthFail:
		return os.WriteFile(healthFail(dir, node), []byte("failed its drill (phx dev fault health-fail)"), 0o644)
	case FaultHealthPass:
		if err := os.Remove(healthFail(dir, node)); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	case FaultXID:
		gpu.Kind, gpu.XID = fakegpu.XID, n
	case FaultECC:
		gpu.Kind = fakegpu.ECC
	case FaultGPULost:
		gpu.Kind = fakegpu.Lost
	case FaultTemperature:
		gpu.Kind, gpu.Value = fakegpu.Temperature, n
	case FaultGPUReset:
		gpu.Kind = fakegpu.Reset
	default:
		return fmt.Errorf("fault %q: use %s: %w", kind, faultKinds, cluster.ErrInvalid)
	}
	gpus, err := nodeGPUs(dir, node)
	if err != nil {
		return err
	}
	if gpus == 0 {
		return fmt.Errorf("dev node %s has no GPUs (phx dev --gpus-per-node 0): a GPU fault needs one: %w", node, cluster.ErrInvalid)
	}
	if err := gpu.Validate(gpus); err != nil {
		return err
	}
	return fakegpu.Inject(gpuFaults(dir, node), gpu)
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

// nodeGPUs reads how many GPUs node of the dev cluster in dir has.
func nodeGPUs(dir, node string) (int, error) {
	path := filepath.Join(dir, "cluster.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("dev cluster in %s: %w", dir, err)
	}
	var l Layout
	if err := json.Unmarshal(data, &l); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return l.hardware(node).GPUs, nil
}
