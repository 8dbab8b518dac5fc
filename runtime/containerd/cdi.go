package containerd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// CDI vendor and class of the GPU devices, as nvidia-ctk names them.
const (
	gpuVendor = "nvidia.com"
	gpuClass  = "gpu"
)

// GPUDevice is the CDI name of host GPU index i: "nvidia.com/gpu=<i>".
func GPUDevice(i int) string {
	return gpuVendor + "/" + gpuClass + "=" + strconv.Itoa(i)
}

// cdiDevices returns the option that injects spec's GPUs and its other
// CDI devices, or nil when it has none. GPUs are left out, with a warning,
// when the host has no CDI spec for GPUs at all; any other device a spec
// does not describe is an error.
func cdiDevices(spec runtime.Spec, cfg SpecConfig) (oci.SpecOpts, error) {
	if len(spec.GPUs) == 0 && len(spec.Devices) == 0 {
		return nil, nil
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(cfg.CDISpecDirs...), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("task %q: CDI: %w", spec.ID, err)
	}
	var names []string
	if len(spec.GPUs) > 0 && !hasGPUSpec(cache) {
		cfg.Logger.Warn("no CDI spec for GPUs; starting the container without them (run `nvidia-ctk cdi generate`)",
			"task", spec.ID, "gpus", spec.GPUs, "cdi_dirs", cfg.CDISpecDirs, "errors", cache.GetErrors())
	} else {
		for _, g := range spec.GPUs {
			names = append(names, GPUDevice(g))
		}
	}
	names = append(names, spec.Devices...)
	var missing []string
	for _, n := range names {
		if cache.GetDevice(n) == nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("task %q: CDI devices %s not found in %s: %w",
			spec.ID, strings.Join(missing, ", "), strings.Join(cfg.CDISpecDirs, ", "), cluster.ErrNotFound)
	}
	if len(names) == 0 {
		return nil, nil
	}
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if _, err := cache.InjectDevices(s, names...); err != nil {
			return fmt.Errorf("task %q: inject CDI devices: %w", spec.ID, err)
		}
		return nil
	}, nil
}

func hasGPUSpec(cache *cdi.Cache) bool {
	for _, s := range cache.GetVendorSpecs(gpuVendor) {
		if s.GetClass() == gpuClass {
			return true
		}
	}
	return false
}
