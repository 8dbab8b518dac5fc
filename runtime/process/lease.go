package process

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// The node's lease (runtime.Fencer) is the runtime's lease file
// (runtime.WriteLease) in its directory. Every task started once the
// runtime holds a lease is fenced by its supervisor, which reads the file
// every runtime.LeasePoll and kills the task's process group once the
// lease has ended, or when the file is gone or unreadable. The supervisor
// then records the end as fenced, and Wait returns runtime.ErrFenced.

var _ runtime.Fencer = (*Runtime)(nil)

// Lease records that the node's lease ends at deadline.
func (r *Runtime) Lease(deadline runtime.BootTime) error {
	if r.dir == "" {
		return fmt.Errorf("lease: the process runtime has no state directory")
	}
	// From the first attempt on, every task is fenced, even if this write
	// fails: a task whose lease cannot be read is killed, never left
	// running unfenced on a node the controller takes as fencing.
	r.leased.Store(true)
	r.leaseMu.Lock()
	defer r.leaseMu.Unlock()
	return runtime.WriteLease(r.dir, deadline)
}

func leasePath(dir string) string { return filepath.Join(dir, runtime.LeaseFile) }

// fence kills process group pgid once the lease at path has ended, and
// sets fenced; it goes on killing what is left of the group (a process
// forked meanwhile) until done is closed.
func fence(path string, pgid int, fenced *atomic.Bool, done <-chan struct{}) {
	tick := time.NewTicker(runtime.LeasePoll)
	defer tick.Stop()
	lease := runtime.NewLeaseWatch(path)
	for {
		if fenced.Load() {
			syscall.Kill(-pgid, syscall.SIGKILL)
		} else if ended, why := lease.Ended(runtime.BootClock()); ended {
			fenced.Store(true)
			fmt.Fprintf(os.Stderr, "%s: killing the task's process group %d: %s\n", ShimName, pgid, why)
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// FencesAll reports whether every task of the runtime is fenced by the
// lease: false once Recover found a task whose supervisor, of an agent
// before leases, does not read it. The agent then does not claim to fence,
// until it starts again with no such task.
func (r *Runtime) FencesAll() bool { return !r.unfenced.Load() }
