package nodeagent

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// NodeChecks are the agent's built-in checks of what jobs need from the
// host besides its GPUs and NICs, run every Interval:
//
//   - "disk": each of Dirs (the job directory; checkpoints later) has at
//     least MinFreeMB free;
//   - "shm": /dev/shm is at least MinShmMB (NCCL and PyTorch's data
//     loaders share memory through it; a container's 64 MiB default
//     breaks them);
//   - "memlock": the locked-memory limit tasks inherit is unlimited, as
//     RDMA needs to register memory (LimitMEMLOCK=infinity).
type NodeChecks struct {
	Dirs      []string
	MinFreeMB int64 // 0: free space not checked
	ShmPath   string
	MinShmMB  int64 // 0: /dev/shm not checked
	Memlock   bool
	Interval  time.Duration // DefaultNodeCheckInterval if zero
}

// DefaultNodeCheckInterval is how often the built-in checks run.
const DefaultNodeCheckInterval = 60 * time.Second

// runNodeChecks runs the built-in checks now and every interval until ctx
// ends.
func (a *Agent) runNodeChecks(ctx context.Context) {
	c := a.cfg.NodeChecks
	if c == nil {
		return
	}
	interval := c.Interval
	if interval <= 0 {
		interval = DefaultNodeCheckInterval
	}
	for {
		found := c.check()
		if a.health.setNodeProblems(found) {
			for _, p := range found {
				a.log.Warn("node check failed", "check", p.check, "message", p.message)
			}
			a.health.wake()
		}
		select {
		case <-ctx.Done():
			return
		case <-a.cfg.Clock.After(interval):
		}
	}
}

// check runs every built-in check once.
func (c *NodeChecks) check() []problem {
	var out []problem
	add := func(check, format string, args ...any) {
		out = append(out, problem{check, fmt.Sprintf(format, args...)})
	}
	if c.MinFreeMB > 0 {
		for _, dir := range c.Dirs {
			free, _, err := statfsMB(dir)
			switch {
			case err != nil:
				add("disk", "%s: %v", dir, err)
			case free < c.MinFreeMB:
				add("disk", "%s has %d MiB free (jobs need %d MiB)", dir, free, c.MinFreeMB)
			}
		}
	}
	if c.MinShmMB > 0 {
		_, size, err := statfsMB(c.ShmPath)
		switch {
		case err != nil:
			add("shm", "%s: %v", c.ShmPath, err)
		case size < c.MinShmMB:
			add("shm", "%s is %d MiB (jobs need %d MiB: NCCL and data loaders share memory through it)", c.ShmPath, size, c.MinShmMB)
		}
	}
	if c.Memlock {
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
			add("memlock", "the locked-memory limit cannot be read: %v", err)
		} else if msg := memlockProblem(lim.Cur); msg != "" {
			add("memlock", "%s", msg)
		}
	}
	return out
}

// memlockProblem says what is wrong with a locked-memory limit of limit
// bytes: anything but unlimited.
func memlockProblem(limit uint64) string {
	if limit == unix.RLIM_INFINITY {
		return ""
	}
	return fmt.Sprintf("locked memory is limited to %d KiB; RDMA needs unlimited (LimitMEMLOCK=infinity in the agent's systemd unit)", limit>>10)
}

// statfsMB returns the space free to unprivileged users and the size of
// the file system holding path, in MiB.
func statfsMB(path string) (free, size int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * st.Bsize >> 20, int64(st.Blocks) * st.Bsize >> 20, nil
}
