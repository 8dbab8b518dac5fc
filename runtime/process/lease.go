package process

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// The node's lease (runtime.Fencer) is the file "lease" in the runtime's
// directory: the boot it was granted in and its end on the boot clock.
// Lease replaces it atomically (a new file renamed over the old), so a
// reader sees one whole lease. It is not synced: a lease is void after a
// reboot, and so are the tasks it fenced.
//
// Every task started once the runtime holds a lease is fenced by its
// supervisor, which reads the file every leasePoll and kills the task's
// process group once the lease has ended, or when the file is gone or
// unreadable: a task the lease cannot be proved for does not run. The
// supervisor then records the end as fenced, and Wait returns
// runtime.ErrFenced. Supervisors read the file whether the agent runs or
// not, so a crashed agent's tasks are fenced too.

const leaseFile = "lease"

// leasePoll is how often a supervisor reads the lease: the controller's
// margin between a lease's end and its verdict on a silent node
// (controller.LeaseMargin) must exceed it with room to spare.
const leasePoll = 100 * time.Millisecond

// leaseRecord is the lease file.
type leaseRecord struct {
	V     int    `json:"v"`
	Boot  string `json:"boot"`
	Until int64  `json:"until_ns"` // on the boot clock
}

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
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	b, err := json.Marshal(leaseRecord{V: recordVersion, Boot: runtime.BootID(), Until: int64(deadline)})
	if err != nil {
		return err
	}
	r.leaseMu.Lock()
	defer r.leaseMu.Unlock()
	tmp, err := os.CreateTemp(r.dir, ".lease-*")
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), leasePath(r.dir))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("lease: %w", err)
	}
	return nil
}

func leasePath(dir string) string { return filepath.Join(dir, leaseFile) }

// leaseEnded reports whether the lease at path has ended at now, or cannot
// be read (why says which).
func leaseEnded(path string, now runtime.BootTime) (ended bool, why string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return true, fmt.Sprintf("no lease (%v)", err)
	}
	var l leaseRecord
	if err := json.Unmarshal(b, &l); err != nil || l.V != recordVersion {
		return true, fmt.Sprintf("unreadable lease %s (%v)", path, err)
	}
	if l.Boot != runtime.BootID() {
		return true, "the lease is of an earlier boot"
	}
	if int64(now) >= l.Until {
		return true, fmt.Sprintf("the lease ended %s ago", time.Duration(int64(now)-l.Until).Round(time.Millisecond))
	}
	return false, ""
}

// fence kills process group pgid once the lease at path has ended, and
// sets fenced; it goes on killing what is left of the group (a process
// forked meanwhile) until done is closed.
func fence(path string, pgid int, fenced *atomic.Bool, done <-chan struct{}) {
	tick := time.NewTicker(leasePoll)
	defer tick.Stop()
	for {
		if fenced.Load() {
			syscall.Kill(-pgid, syscall.SIGKILL)
		} else if ended, why := leaseEnded(path, runtime.BootClock()); ended {
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
