package runtime

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// Leases fence a node's tasks. The controller grants a node that fences a
// lease with every answer to its agent; the agent hands it to its runtime
// as a deadline; past the deadline with no new one, the runtime kills the
// node's tasks, whether the agent still runs or not (a crashed agent, one
// cut off from every controller). The controller declares a node lost only
// after a silence longer than the lease, so by then nothing of the old
// attempt runs there, and the job can start again elsewhere: two attempts
// never run at once.
//
// Deadlines are on the boot clock (CLOCK_BOOTTIME): one clock for every
// process of the host, the agent and the tasks' supervisors, that never
// jumps and counts time spent suspended.

// BootTime is a point on the boot clock: the time since the host booted.
type BootTime time.Duration

// BootClock reads the boot clock.
func BootClock() BootTime {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// Linux has had CLOCK_BOOTTIME since 2.6.39; the monotonic clock
		// is the same less suspended time.
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	}
	return BootTime(ts.Nano())
}

// Add returns t+d.
func (t BootTime) Add(d time.Duration) BootTime { return t + BootTime(d) }

// Fencer is a Runtime whose tasks stop by themselves when the node's lease
// ends.
type Fencer interface {
	// Lease sets the node's lease to end at deadline, for the tasks
	// running and those started after. A task still running at the
	// deadline is killed, and its Wait returns ErrFenced. Until the first
	// call the runtime's tasks have no lease.
	Lease(deadline BootTime) error
}

// ErrFenced is what Wait returns, wrapped, for a task killed because the
// node's lease ended: no controller had answered its agent for the length
// of a lease.
var ErrFenced = errors.New("killed when the node's lease ended (no controller answered its agent in time)")
