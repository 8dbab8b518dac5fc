package gpu

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Health watching. A Watcher follows the GPUs a node registered, through
// two channels of NVML:
//
//   - an event set, for XIDs and double-bit ECC errors as the driver
//     raises them: each is a Verdict passed to the event callback, once;
//   - a poll every Interval (and at once after any event), for the states
//     that last until a reset or a repair: uncorrectable ECC errors since
//     the last reset, pending or failed row remaps, pending retired pages,
//     GPUs gone from the bus, and clocks slowed down by heat. The poll
//     passes the whole list to the levels callback whenever it changes.
//
// A counter the GPU does not support (ECC off, a consumer GPU, row
// remapping before Ampere) is skipped, not a fault.

// The checks' names, as problems and drain reasons carry them.
const (
	CheckXID          = "gpu-xid"
	CheckECC          = "gpu-ecc"
	CheckRowRemap     = "gpu-row-remap"
	CheckRetiredPages = "gpu-retired-pages"
	CheckLost         = "gpu-lost"
	CheckThermal      = "gpu-thermal"
)

// DefaultPollInterval is how often a Watcher reads the GPUs' counters.
const DefaultPollInterval = 5 * time.Second

// eventWait bounds one wait on the event set, so that the watcher sees its
// context end.
const eventWait = 500 // ms

// watchedEvents are the NVML events a Watcher registers for.
const watchedEvents = nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError

// heatThrottle are the clock-slowdown reasons that mean a GPU runs too hot
// or its board asked it to slow down (not a power cap a user set).
const heatThrottle = nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksThrottleReasonHwThermalSlowdown |
	nvml.ClocksThrottleReasonHwPowerBrakeSlowdown

// Verdict is what a check found wrong with one GPU.
type Verdict struct {
	GPU      int    // NVML index
	UUID     string // GPU-...
	Check    string // CheckXID, ...
	Class    Class
	Evidence string    // what NVML said, e.g. "XID 79 (GPU has fallen off the bus)"
	At       time.Time // when it was first seen
}

// Message is the verdict in one line: which GPU, the evidence, what to do.
func (v Verdict) Message() string {
	if v.GPU < 0 { // not known which
		return fmt.Sprintf("%s: %s", v.Evidence, v.Class.Action())
	}
	return fmt.Sprintf("GPU %d %s: %s", v.GPU, v.Evidence, v.Class.Action())
}

// same says whether v and o are the same finding: the same check failing
// on the same GPU, whatever its numbers say now (a temperature, an error
// count). A finding keeps its first sighting and first evidence while it
// lasts, so that a hot GPU's changing temperature is not a new drain
// reason, a heartbeat and a node event every poll.
func (v Verdict) same(o Verdict) bool {
	return v.GPU == o.GPU && v.Check == o.Check && v.Class == o.Class
}

// Watcher watches the health of a node's GPUs through NVML.
type Watcher struct {
	Lib      nvml.Interface
	Devices  []Device      // as the node registered them
	Interval time.Duration // between polls; DefaultPollInterval if zero
	Log      *slog.Logger
	Now      func() time.Time // time.Now if nil
}

// Run watches until ctx ends. levels gets every poll's verdicts when they
// differ from the last; event gets each XID or ECC event's verdict. Both
// are called from one goroutine at a time.
func (w *Watcher) Run(ctx context.Context, levels func([]Verdict), event func(Verdict)) error {
	if ret := w.Lib.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML init: %v", ret)
	}
	defer w.Lib.Shutdown()
	var mu sync.Mutex // one callback at a time
	poll := make(chan struct{}, 1)
	if set := w.events(); set != nil {
		defer set.Free()
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			w.waitEvents(ctx, set, func(v Verdict) {
				mu.Lock()
				event(v)
				mu.Unlock()
				select {
				case poll <- struct{}{}:
				default:
				}
			})
		}()
	}
	interval := w.Interval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last []Verdict
	for first := true; ; first = false {
		cur := w.check(last)
		if first || !slices.EqualFunc(cur, last, Verdict.same) {
			mu.Lock()
			levels(cur)
			mu.Unlock()
			last = cur
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-poll:
		}
	}
}

// Check polls every registered GPU now and returns what Run's levels
// would: the failing states, not the events. NVML counts its
// initialisations, so Check may run beside Run.
func (w *Watcher) Check() []Verdict {
	if ret := w.Lib.Init(); ret != nvml.SUCCESS {
		return []Verdict{{GPU: -1, Check: CheckLost, Class: ClassHardware, Evidence: fmt.Sprintf("NVML cannot start (%v)", ret), At: w.now()}}
	}
	defer w.Lib.Shutdown()
	return w.check(nil)
}

// now is the watcher's clock.
func (w *Watcher) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// events creates an event set and registers every GPU on it for the
// events it supports. nil when NVML offers none: the polls still run.
func (w *Watcher) events() nvml.EventSet {
	set, ret := w.Lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		w.Log.Warn("NVML has no event sets: XIDs go unseen, counters are still polled", "err", ret)
		return nil
	}
	for _, d := range w.Devices {
		h, ret := w.handle(d)
		if ret != nvml.SUCCESS {
			continue // the poll reports it
		}
		supported, ret := h.GetSupportedEventTypes()
		if ret != nvml.SUCCESS {
			supported = watchedEvents
		}
		if ret := h.RegisterEvents(watchedEvents&supported, set); ret != nvml.SUCCESS {
			w.Log.Warn("GPU events cannot be watched: its XIDs go unseen", "gpu", d.Index, "err", ret)
		}
	}
	return set
}

// waitEvents turns the set's events into verdicts until ctx ends.
func (w *Watcher) waitEvents(ctx context.Context, set nvml.EventSet, event func(Verdict)) {
	for ctx.Err() == nil {
		e, ret := set.Wait(eventWait)
		switch ret {
		case nvml.SUCCESS:
			event(w.eventVerdict(e))
		case nvml.ERROR_TIMEOUT:
		case nvml.ERROR_GPU_IS_LOST:
			event(Verdict{GPU: -1, Check: CheckLost, Class: ClassHardware, Evidence: "a GPU was lost while waiting for events", At: w.now()})
		default:
			w.Log.Warn("waiting for GPU events failed: retrying", "err", ret)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// eventVerdict classifies an NVML event.
func (w *Watcher) eventVerdict(e nvml.EventData) Verdict {
	v := Verdict{GPU: -1, At: w.now()}
	if e.Device != nil {
		if uuid, ret := e.Device.GetUUID(); ret == nvml.SUCCESS {
			v.UUID = uuid
			for _, d := range w.Devices {
				if d.UUID == uuid {
					v.GPU = d.Index
				}
			}
		}
	}
	if e.EventType&nvml.EventTypeDoubleBitEccError != 0 {
		v.Check, v.Class, v.Evidence = CheckECC, ClassReset, "double-bit ECC error"
		return v
	}
	name, class := ClassifyXID(e.EventData)
	v.Check, v.Class, v.Evidence = CheckXID, class, fmt.Sprintf("XID %d (%s)", e.EventData, name)
	return v
}

// handle is d's NVML handle: by its UUID, or by its index when it was
// registered lost, without one (Discover).
func (w *Watcher) handle(d Device) (nvml.Device, nvml.Return) {
	if d.UUID == "" {
		return w.Lib.DeviceGetHandleByIndex(d.Index)
	}
	return w.Lib.DeviceGetHandleByUUID(d.UUID)
}

// check polls every registered GPU. A verdict also in last keeps its
// first sighting.
func (w *Watcher) check(last []Verdict) []Verdict {
	var out []Verdict
	add := func(d Device, check string, class Class, format string, args ...any) {
		v := Verdict{GPU: d.Index, UUID: d.UUID, Check: check, Class: class, Evidence: fmt.Sprintf(format, args...), At: w.now()}
		if i := slices.IndexFunc(last, v.same); i >= 0 {
			v.At, v.Evidence = last[i].At, last[i].Evidence
		}
		out = append(out, v)
	}
	lost := 0
	for _, d := range w.Devices {
		h, ret := w.handle(d)
		if ret != nvml.SUCCESS {
			add(d, CheckLost, ClassHardware, "is gone from the bus (NVML: %v)", ret)
			lost++
			continue
		}
		if n, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); ret == nvml.SUCCESS && n > 0 {
			agg, _ := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC)
			add(d, CheckECC, ClassReset, "has %d uncorrectable ECC errors since its last reset (%d in its life)", n, agg)
		}
		if _, unc, pending, failed, ret := h.GetRemappedRows(); ret == nvml.SUCCESS {
			switch {
			case failed:
				add(d, CheckRowRemap, ClassHardware, "failed to remap a row (%d rows remapped for uncorrectable errors)", unc)
			case pending:
				add(d, CheckRowRemap, ClassReset, "has a row remap pending (%d rows remapped for uncorrectable errors)", unc)
			}
		}
		if st, ret := h.GetRetiredPagesPendingStatus(); ret == nvml.SUCCESS && st == nvml.FEATURE_ENABLED {
			add(d, CheckRetiredPages, ClassReset, "has a page retirement pending")
		}
		if reasons, ret := h.GetCurrentClocksThrottleReasons(); ret == nvml.SUCCESS && reasons&heatThrottle != 0 {
			temp, _ := h.GetTemperature(nvml.TEMPERATURE_GPU)
			slow, _ := h.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN)
			add(d, CheckThermal, ClassHardware, "is slowed down (%s) at %d °C (slowdown at %d °C)", throttleNames(reasons), temp, slow)
		}
	}
	if n, ret := w.Lib.DeviceGetCount(); ret == nvml.SUCCESS && lost == 0 && n < len(w.Devices) {
		add(Device{Index: -1}, CheckLost, ClassHardware, "NVML counts %d GPUs, the node registered %d", n, len(w.Devices))
	}
	return out
}

// throttleNames names the heat-related reasons set in reasons.
func throttleNames(reasons uint64) string {
	var names []string
	for _, r := range []struct {
		bit  uint64
		name string
	}{
		{nvml.ClocksThrottleReasonHwThermalSlowdown, "HW thermal"},
		{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "HW power brake"},
		{nvml.ClocksThrottleReasonHwSlowdown, "HW slowdown"},
	} {
		if reasons&r.bit != 0 {
			names = append(names, r.name)
		}
	}
	return strings.Join(names, ", ")
}

// Busy reports whether any of the GPUs of indices computes now, by NVML's
// utilisation over its last sample period: progress, for hang detection.
// A GPU NVML cannot read counts as idle.
func (w *Watcher) Busy(indices []int) bool {
	for _, d := range w.Devices {
		if !slices.Contains(indices, d.Index) {
			continue
		}
		h, ret := w.handle(d)
		if ret != nvml.SUCCESS {
			continue
		}
		if u, ret := h.GetUtilizationRates(); ret == nvml.SUCCESS && u.Gpu > 0 {
			return true
		}
	}
	return false
}
