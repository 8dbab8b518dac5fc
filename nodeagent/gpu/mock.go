package gpu

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// memoryInName finds a memory size in a model name, as in "A100-SXM4-80GB".
var memoryInName = regexp.MustCompile(`(\d+)GB`)

// newMock adapts go-nvml's dgxa100 mock (always eight A100-40GB) to report
// n devices named model. Each device is a fresh dgxa100 device, so UUIDs are
// unique and PCI bus IDs follow the index. The memory size is read from the
// model name when it has one ("...-80GB"), else the mock's own is kept.
func newMock(n int, model string) nvml.Interface {
	s := dgxa100.New()
	devs := make([]*dgxa100.Device, n)
	for i := range devs {
		d := dgxa100.NewDevice(i)
		if model != "" {
			d.Name = model
		}
		if m := memoryInName.FindStringSubmatch(d.Name); m != nil {
			gb, _ := strconv.ParseUint(m[1], 10, 64) // digits only: cannot fail short of overflow
			d.MemoryInfo = nvml.Memory{Total: gb << 30, Free: gb << 30}
		}
		d.PciBusID = fmt.Sprintf("00000000:%02x:00.0", i)
		d.GetPciInfoFunc = pciInfo(d.PciBusID)
		devs[i] = d
	}
	s.DeviceGetCountFunc = func() (int, nvml.Return) { return n, nvml.SUCCESS }
	s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i < 0 || i >= n {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		return devs[i], nvml.SUCCESS
	}
	s.DeviceGetHandleByUUIDFunc = func(uuid string) (nvml.Device, nvml.Return) {
		for _, d := range devs {
			if d.UUID == uuid {
				return d, nvml.SUCCESS
			}
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	return s
}

// pciInfo reports busID the way NVML does, as a NUL-terminated array (the
// mock leaves it empty).
func pciInfo(busID string) func() (nvml.PciInfo, nvml.Return) {
	return func() (nvml.PciInfo, nvml.Return) {
		p := nvml.PciInfo{PciDeviceId: 0x20B210DE}
		copy(p.BusId[:len(p.BusId)-1], busID)
		copy(p.BusIdLegacy[:len(p.BusIdLegacy)-1], busID)
		return p, nvml.SUCCESS
	}
}
