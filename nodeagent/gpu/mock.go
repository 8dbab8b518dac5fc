package gpu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/phalanx-hpc/phalanx/internal/fakegpu"
)

// memoryInName finds a memory size in a model name, as in "A100-SXM4-80GB".
var memoryInName = regexp.MustCompile(`(\d+)GB`)

// The fake GPUs' temperatures: at rest, and where their hardware slows
// their clocks down (an A100's is about 92 °C).
const (
	mockIdleTemp     = 35
	mockSlowdownTemp = 90
)

// mockWaitStep is how often a wait on the fake GPUs' event set looks at
// the fault file: often enough that an XID is seen at once, rarely enough
// that an idle agent's watching costs little.
const mockWaitStep = 100 * time.Millisecond

// mockSupportedEvents are the NVML events the fake GPUs can raise.
const mockSupportedEvents = nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError | nvml.EventTypeSingleBitEccError

// fakeGPUs is go-nvml's dgxa100 mock (always eight A100-40GB) adapted to
// report n devices named model, whose health the faults of a fakegpu file
// change while it runs. Each device is a fresh dgxa100 device, so UUIDs
// are unique (with a fault file, derived from its path and the index, so
// that a restarted agent finds the GPUs it had) and PCI bus IDs follow the
// index. The memory size is read from the model name when it has one
// ("...-80GB"), else the mock's own is kept.
//
// Faults already in the file when the mock starts happened before: their
// state holds (a GPU lost and not reset is still lost), but their events
// are not raised again, as a real GPU's XIDs are delivered once, to the
// agent that ran then.
type fakeGPUs struct {
	*dgxa100.Server
	devs   []*dgxa100.Device
	faults *fakegpu.Reader // nil: healthy for ever

	mu     sync.Mutex
	health []fakeHealth
	queue  []raised // not yet waited for
	log    *slog.Logger
}

// raised is an event of GPU gpu.
type raised struct {
	gpu   int
	event nvml.EventData
}

// fakeHealth is what the faults did to one fake GPU.
type fakeHealth struct {
	lost                  bool
	volatileUE, aggregate uint64 // uncorrectable ECC errors
	remapPending          bool
	remapped              int // rows remapped for uncorrectable errors
	temp                  uint32
	events                uint64 // event types registered, on every set
}

func newMock(n int, model, faultFile string, log *slog.Logger) *fakeGPUs {
	m := &fakeGPUs{Server: dgxa100.New(), devs: make([]*dgxa100.Device, n), health: make([]fakeHealth, n), log: log}
	if faultFile != "" {
		m.faults = &fakegpu.Reader{Path: faultFile}
	}
	for i := range m.devs {
		d := dgxa100.NewDevice(i)
		if model != "" {
			d.Name = model
		}
		if m := memoryInName.FindStringSubmatch(d.Name); m != nil {
			gb, _ := strconv.ParseUint(m[1], 10, 64) // digits only: cannot fail short of overflow
			d.MemoryInfo = nvml.Memory{Total: gb << 30, Free: gb << 30}
		}
		if faultFile != "" {
			d.UUID = stableUUID(faultFile, i)
		}
		d.PciBusID = fmt.Sprintf("00000000:%02x:00.0", i)
		d.GetPciInfoFunc = pciInfo(d.PciBusID)
		m.health[i].temp = mockIdleTemp
		m.wireHealth(i, &d.Device)
		m.devs[i] = d
	}
	// The driver counts a GPU fallen off the bus (nvidia-smi lists it as
	// "GPU is lost"): it answers ERROR_GPU_IS_LOST, by index and by UUID.
	m.DeviceGetCountFunc = func() (int, nvml.Return) { return n, nvml.SUCCESS }
	m.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i < 0 || i >= n {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		if m.lost(i) {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return m.devs[i], nvml.SUCCESS
	}
	m.DeviceGetHandleByUUIDFunc = func(uuid string) (nvml.Device, nvml.Return) {
		m.sync()
		for i, d := range m.devs {
			if d.UUID == uuid {
				if m.lost(i) {
					return nil, nvml.ERROR_GPU_IS_LOST
				}
				return d, nvml.SUCCESS
			}
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	m.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{WaitFunc: m.wait, FreeFunc: func() nvml.Return { return nvml.SUCCESS }}, nvml.SUCCESS
	}
	m.sync() // the faults of before: their state, not their events
	m.mu.Lock()
	m.queue = nil
	m.mu.Unlock()
	return m
}

// stableUUID is a GPU UUID, in NVML's form, that depends only on the fault
// file and the index.
func stableUUID(faultFile string, i int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", faultFile, i)))
	x := hex.EncodeToString(h[:16])
	return fmt.Sprintf("GPU-%s-%s-%s-%s-%s", x[:8], x[8:12], x[12:16], x[16:20], x[20:32])
}

// wireHealth makes device i's health calls answer from m.health[i].
func (m *fakeGPUs) wireHealth(i int, d *mock.Device) {
	get := func(read func(h *fakeHealth)) nvml.Return {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.health[i].lost {
			return nvml.ERROR_GPU_IS_LOST
		}
		read(&m.health[i])
		return nvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(kind nvml.MemoryErrorType, counter nvml.EccCounterType) (n uint64, ret nvml.Return) {
		ret = get(func(h *fakeHealth) {
			switch {
			case kind != nvml.MEMORY_ERROR_TYPE_UNCORRECTED:
			case counter == nvml.VOLATILE_ECC:
				n = h.volatileUE
			default:
				n = h.aggregate
			}
		})
		return n, ret
	}
	d.GetRemappedRowsFunc = func() (corr, unc int, pending, failed bool, ret nvml.Return) {
		ret = get(func(h *fakeHealth) { unc, pending = h.remapped, h.remapPending })
		return corr, unc, pending, failed, ret
	}
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) {
		return nvml.FEATURE_DISABLED, nvml.ERROR_NOT_SUPPORTED // Ampere remaps rows instead
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (t uint32, ret nvml.Return) {
		ret = get(func(h *fakeHealth) { t = h.temp })
		return t, ret
	}
	d.GetTemperatureThresholdFunc = func(nvml.TemperatureThresholds) (uint32, nvml.Return) {
		return mockSlowdownTemp, nvml.SUCCESS
	}
	d.GetCurrentClocksThrottleReasonsFunc = func() (r uint64, ret nvml.Return) {
		ret = get(func(h *fakeHealth) {
			r = nvml.ClocksThrottleReasonGpuIdle
			if h.temp >= mockSlowdownTemp {
				r = nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksThrottleReasonHwThermalSlowdown
			}
		})
		return r, ret
	}
	d.GetUtilizationRatesFunc = func() (u nvml.Utilization, ret nvml.Return) {
		return u, get(func(*fakeHealth) {}) // nothing runs on a fake GPU: idle
	}
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return mockSupportedEvents, nvml.SUCCESS }
	d.RegisterEventsFunc = func(types uint64, _ nvml.EventSet) nvml.Return {
		return get(func(h *fakeHealth) { h.events |= types })
	}
}

// lost says whether GPU i fell off the bus.
func (m *fakeGPUs) lost(i int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.health[i].lost
}

// wait is EventSet.Wait: the next event raised on a registered type, or
// ERROR_TIMEOUT after timeoutMs.
func (m *fakeGPUs) wait(timeoutMs uint32) (nvml.EventData, nvml.Return) {
	deadline := time.Now().Add(time.Duration(timeoutMs) * time.Millisecond)
	for {
		m.sync()
		m.mu.Lock()
		for len(m.queue) > 0 {
			r := m.queue[0]
			m.queue = m.queue[1:]
			if m.health[r.gpu].events&r.event.EventType != 0 {
				m.mu.Unlock()
				return r.event, nvml.SUCCESS
			}
		}
		m.mu.Unlock()
		if !time.Now().Before(deadline) {
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		}
		time.Sleep(min(mockWaitStep, time.Until(deadline)))
	}
}

// raise queues an event of GPU i; wait hands it to the sets it is
// registered on.
func (m *fakeGPUs) raise(i int, kind, data uint64) {
	m.queue = append(m.queue, raised{i, nvml.EventData{Device: m.devs[i], EventType: kind, EventData: data}})
}

// sync plays the faults appended to the fault file since it last looked.
func (m *fakeGPUs) sync() {
	if m.faults == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	faults, err := m.faults.Next()
	if err != nil && m.log != nil {
		m.log.Warn("fake GPUs: a fault is malformed: skipped", "err", err)
	}
	for _, f := range faults {
		if f.GPU >= len(m.health) {
			if m.log != nil {
				m.log.Warn("fake GPUs: a fault names a GPU this node lacks: skipped", "gpu", f.GPU, "gpus", len(m.health))
			}
			continue
		}
		m.apply(f)
	}
}

// apply does what fault f does to its GPU.
func (m *fakeGPUs) apply(f fakegpu.Fault) {
	h := &m.health[f.GPU]
	switch f.Kind {
	case fakegpu.XID:
		if !h.lost {
			m.raise(f.GPU, nvml.EventTypeXidCriticalError, uint64(f.XID))
		}
	case fakegpu.ECC:
		h.volatileUE++
		h.aggregate++
		h.remapped++
		h.remapPending = true
		m.raise(f.GPU, nvml.EventTypeXidCriticalError, 94)
	case fakegpu.Lost:
		if !h.lost {
			m.raise(f.GPU, nvml.EventTypeXidCriticalError, 79)
			h.lost = true
		}
	case fakegpu.Temperature:
		h.temp = uint32(f.Value)
	case fakegpu.Reset:
		h.lost, h.volatileUE, h.remapPending, h.temp = false, 0, false, mockIdleTemp
	}
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
