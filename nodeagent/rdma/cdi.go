package rdma

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// CDI vendor and class under which the agent describes the node's RDMA
// devices to container runtimes; a device is named by its kernel name,
// e.g. phalanx.dev/rdma=mlx5_0.
const (
	CDIVendor = "phalanx.dev"
	CDIClass  = "rdma"
)

// CDIDevice is the qualified CDI name of RDMA device dev.
func CDIDevice(dev string) string { return cdi.QualifiedName(CDIVendor, CDIClass, dev) }

// CDISpec describes the devices of ports for CDI: each RDMA device is its
// verbs character device (/dev/infiniband/uverbsN), and any of them
// brings the connection manager (/dev/infiniband/rdma_cm) when the host
// has it. Major and minor numbers are read from sysfs under root, so the
// spec needs no /dev of its own. It lists the devices' names too.
func CDISpec(root string, ports []Port) (*cdispec.Spec, []string, error) {
	spec := &cdispec.Spec{Kind: CDIVendor + "/" + CDIClass}
	var names []string
	for _, p := range ports {
		if slices.Contains(names, p.Device) {
			continue
		}
		node, err := verbsNode(root, p.Device)
		if err != nil {
			return nil, nil, err
		}
		spec.Devices = append(spec.Devices, cdispec.Device{Name: p.Device,
			ContainerEdits: cdispec.ContainerEdits{DeviceNodes: []*cdispec.DeviceNode{node}}})
		names = append(names, p.Device)
	}
	if cm, err := charNode(filepath.Join(root, "class", "misc", "rdma_cm", "dev"), "/dev/infiniband/rdma_cm"); err == nil {
		spec.ContainerEdits.DeviceNodes = append(spec.ContainerEdits.DeviceNodes, cm)
	} else if !os.IsNotExist(err) {
		return nil, nil, err
	}
	version, err := cdi.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("CDI spec for RDMA: %w", err)
	}
	spec.Version = version
	return spec, names, nil
}

// verbsNode is the verbs character device of RDMA device dev.
func verbsNode(root, dev string) (*cdispec.DeviceNode, error) {
	dir := filepath.Join(root, "class", "infiniband", dev, "device", "infiniband_verbs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("RDMA device %s has no verbs device (is ib_uverbs loaded?): %w", dev, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "uverbs") {
			return charNode(filepath.Join(dir, e.Name(), "dev"), "/dev/infiniband/"+e.Name())
		}
	}
	return nil, fmt.Errorf("RDMA device %s has no verbs device in %s (is ib_uverbs loaded?)", dev, dir)
}

// charNode is the character device whose MAJOR:MINOR sysfs file devFile
// holds, at path in the container.
func charNode(devFile, path string) (*cdispec.DeviceNode, error) {
	b, err := os.ReadFile(devFile)
	if err != nil {
		return nil, err
	}
	maj, min, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	major, err1 := strconv.ParseInt(maj, 10, 64)
	minor, err2 := strconv.ParseInt(min, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%s: %q is not MAJOR:MINOR", devFile, b)
	}
	mode := os.FileMode(0o666) // as udev makes them: verbs access is shared
	return &cdispec.DeviceNode{Path: path, Type: "c", Major: major, Minor: minor, FileMode: &mode, Permissions: "rw"}, nil
}

// WriteCDISpec writes spec as dir/phalanx.dev-rdma.json, whole or not at
// all, for a runtime that reads CDI specs from dir.
func WriteCDISpec(dir string, spec *cdispec.Spec) error {
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, CDIVendor+"-"+CDIClass+".json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
