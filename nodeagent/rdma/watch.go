package rdma

import (
	"context"
	"log/slog"
	"slices"
	"time"
)

// DefaultWatchInterval is how often Watcher reads the ports' state files.
const DefaultWatchInterval = time.Second

// StateMissing is the state of a port whose files are gone: the device
// fell off the bus or its driver was unloaded.
const StateMissing = "MISSING"

// Watcher follows the link state of a host's ports.
type Watcher struct {
	Root     string
	Interval time.Duration // default DefaultWatchInterval
	// Netlink also wakes the watcher on netlink link updates, so that a
	// RoCE netdev's change is read at once (real hosts; a fake tree has no
	// netdevs to watch).
	Netlink bool
	Log     *slog.Logger
}

// Run reads ports' state every interval, and calls changed with all of
// them, current, whenever one of their states differs from the last
// reading, until ctx ends. ports are those Discover found; their static
// fields are kept.
func (w *Watcher) Run(ctx context.Context, ports []Port, changed func([]Port)) {
	interval := w.Interval
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	log := w.Log
	if log == nil {
		log = slog.Default()
	}
	var wake <-chan string
	if w.Netlink {
		names, err := subscribeLinks(ctx.Done())
		if err != nil {
			log.Warn("RDMA links are polled only", "every", interval, "err", err)
		} else {
			wake = names
		}
	}
	last := slices.Clone(ports)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-wake:
			if !ok {
				wake = nil
				continue
			}
		case <-t.C:
		}
		cur := w.Read(last)
		if !sameStates(cur, last) {
			changed(slices.Clone(cur))
		}
		last = cur
	}
}

// Read returns ports with their current states; a port whose files are
// gone is StateMissing.
func (w *Watcher) Read(ports []Port) []Port {
	out := slices.Clone(ports)
	for i := range out {
		if err := out[i].readState(w.Root); err != nil {
			out[i].State, out[i].PhysState = StateMissing, StateMissing
		}
	}
	return out
}

func sameStates(a, b []Port) bool {
	return slices.EqualFunc(a, b, func(x, y Port) bool { return x.State == y.State && x.PhysState == y.PhysState })
}
