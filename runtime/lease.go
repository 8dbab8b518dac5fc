package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// The lease file. A runtime that fences keeps the node's lease in one
// file, LeaseFile in its state directory: the boot it was granted in and
// its end on the boot clock. WriteLease replaces it atomically (a new file
// renamed over the old), so a reader sees one whole lease. It is not
// synced: a lease is void after a reboot, and so are the tasks it fenced.
// Whatever watches a task (a process's supervisor, a container's I/O
// keeper) reads it every LeasePoll and kills the task once LeaseEnded says
// so, whether the agent runs or not.

// LeaseFile is the lease's file name in a runtime's state directory.
const LeaseFile = "lease"

// LeasePoll is how often a task's watcher reads the lease: the
// controller's margin between a lease's end and its verdict on a silent
// node (controller.LeaseMargin) must exceed it with room to spare.
const LeasePoll = 100 * time.Millisecond

// leaseVersion is the version of the lease file's format. Watchers of
// tasks started by an earlier agent read the file a later agent writes.
const leaseVersion = 1

// leaseRecord is the lease file.
type leaseRecord struct {
	V     int    `json:"v"`
	Boot  string `json:"boot"`
	Until int64  `json:"until_ns"` // on the boot clock
}

// WriteLease records in dir's lease file that the node's lease ends at
// deadline. Callers serialise their calls.
func WriteLease(dir string, deadline BootTime) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	b, err := json.Marshal(leaseRecord{V: leaseVersion, Boot: BootID(), Until: int64(deadline)})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".lease-*")
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, LeaseFile))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("lease: %w", err)
	}
	return nil
}

// LeaseEnded reports whether the lease in the file at path has ended at
// now, or cannot be read (why says which): a task the lease cannot be
// proved for does not run. A watcher that asks again and again uses a
// LeaseWatch.
func LeaseEnded(path string, now BootTime) (ended bool, why string) {
	return NewLeaseWatch(path).Ended(now)
}

// LeaseWatch reads one lease file every time it is asked, as a task's
// watcher does every LeasePoll: the file is read each time (the agent may
// have replaced it), and decoded only when its bytes changed since the
// last read, which between two heartbeats they do not.
type LeaseWatch struct {
	path    string
	scratch []byte // what each read reads into
	last    []byte // the bytes rec and why were decoded from
	decoded bool   // whether last, rec and why are set
	rec     leaseRecord
	why     string // why last is no lease; "" when it is one
}

// leaseFileMax bounds a lease file; the agent's are under 100 bytes.
const leaseFileMax = 4 << 10

// NewLeaseWatch watches the lease file at path.
func NewLeaseWatch(path string) *LeaseWatch {
	return &LeaseWatch{path: path}
}

// Ended is LeaseEnded for the watched file.
func (w *LeaseWatch) Ended(now BootTime) (ended bool, why string) {
	if err := w.read(); err != nil {
		return true, fmt.Sprintf("no lease (%v)", err)
	}
	if w.why != "" {
		return true, w.why
	}
	if int64(now) >= w.rec.Until {
		return true, fmt.Sprintf("the lease ended %s ago", time.Duration(int64(now)-w.rec.Until).Round(time.Millisecond))
	}
	return false, ""
}

// read reads the file and decodes it if its bytes changed.
func (w *LeaseWatch) read() error {
	f, err := os.Open(w.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if w.scratch == nil {
		w.scratch = make([]byte, leaseFileMax+1)
	}
	n, err := io.ReadFull(f, w.scratch)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return err
	}
	if n > leaseFileMax {
		return fmt.Errorf("%s is over %d bytes: not a lease", w.path, leaseFileMax)
	}
	if w.decoded && bytes.Equal(w.scratch[:n], w.last) {
		return nil
	}
	w.last = append(w.last[:0], w.scratch[:n]...)
	w.decoded = true
	w.rec, w.why = leaseRecord{}, ""
	switch err := json.Unmarshal(w.last, &w.rec); {
	case err != nil || w.rec.V != leaseVersion:
		w.why = fmt.Sprintf("unreadable lease %s (%v)", w.path, err)
	case w.rec.Boot != BootID():
		w.why = "the lease is of an earlier boot"
	}
	return nil
}
