package rdma

import (
	"path/filepath"
	"testing"

	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/phalanx-hpc/phalanx/internal/fakesysfs"
)

// The spec the agent writes describes each RDMA device's verbs device and
// the shared rdma_cm, and a CDI cache reads it back and injects them.
func TestCDISpecRoundTrip(t *testing.T) {
	root := t.TempDir()
	if err := fakesysfs.Write(root, fakesysfs.Host{NICs: 2}); err != nil {
		t.Fatal(err)
	}
	ports, err := Discover(root, SysfsLister{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	spec, names, err := CDISpec(root, ports)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 || names[0] != "mlx5_0" || names[1] != "mlx5_1" {
		t.Fatalf("devices %v", names)
	}
	dir := filepath.Join(t.TempDir(), "cdi")
	if err := WriteCDISpec(dir, spec); err != nil {
		t.Fatal(err)
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	if errs := cache.GetErrors(); len(errs) != 0 {
		t.Fatalf("the CDI cache refuses the spec: %v", errs)
	}
	dev := cache.GetDevice(CDIDevice("mlx5_1"))
	if dev == nil {
		t.Fatalf("%s not in the cache; have %v", CDIDevice("mlx5_1"), cache.ListDevices())
	}
	n := dev.ContainerEdits.DeviceNodes
	if len(n) != 1 || n[0].Path != "/dev/infiniband/uverbs1" || n[0].Type != "c" || n[0].Major != 231 || n[0].Minor != 193 {
		t.Errorf("mlx5_1's device nodes: %+v", n)
	}
	cm := spec.ContainerEdits.DeviceNodes
	if len(cm) != 1 || cm[0].Path != "/dev/infiniband/rdma_cm" || cm[0].Major != 10 || cm[0].Minor != 58 {
		t.Errorf("spec-wide device nodes: %+v", cm)
	}
}

// A host without ib_uverbs has no verbs devices: the spec cannot be made,
// and the error says what to load.
func TestCDISpecWithoutVerbs(t *testing.T) {
	root := t.TempDir()
	if err := fakesysfs.Write(root, fakesysfs.Host{NICs: 1}); err != nil {
		t.Fatal(err)
	}
	ports, err := Discover(root, SysfsLister{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	ports[0].Device = "mlx5_9" // a device whose verbs node is not there
	if _, _, err := CDISpec(root, ports); err == nil {
		t.Fatal("a spec for a device without its verbs node")
	}
}
