package process

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// Recover finds the tasks recorded in the runtime's directory: each is
// running under its supervisor, or ended (its supervisor recorded how), or
// lost (its supervisor is gone and recorded nothing; what is left of its
// group is killed). Records of an earlier boot are removed: their
// processes died with it.
func (r *Runtime) Recover(ctx context.Context) ([]runtime.Task, error) {
	paths, err := filepath.Glob(filepath.Join(r.dir, "*"+recordExt))
	if err != nil {
		return nil, err
	}
	boot := runtime.BootID()
	var tasks []runtime.Task
	var errs []error
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return tasks, err
		}
		id := strings.TrimSuffix(filepath.Base(p), recordExt)
		rec, err := readRecord(p)
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case rec.ID != id:
			errs = append(errs, fmt.Errorf("task record %s names task %q", p, rec.ID))
			continue
		case rec.Boot != boot:
			removeRecords(r.dir, id) // the task died with the boot it ran in
			continue
		}
		if !rec.Fenced {
			r.unfenced.Store(true)
		}
		tasks = append(tasks, r.recovered(rec))
	}
	return tasks, errors.Join(errs...)
}

// recovered makes a task of a record: it is waited for through a pidfd on
// its supervisor (no longer this process's child), if that still runs.
func (r *Runtime) recovered(rec record) *task {
	t := newTask(rec.ID, rec.PGID, r)
	pidfd, err := unix.PidfdOpen(rec.ShimPID, 0)
	if err == nil {
		// The PID may name another process now: the start time tells.
		if start, ok := startTime(rec.ShimPID); !ok || start != rec.ShimStart {
			unix.Close(pidfd)
			pidfd = -1
		}
	} else {
		pidfd = -1
	}
	if pidfd < 0 {
		go t.supervisorExited() // gone: its .exit, if any, says how the task ended
		return t
	}
	go func() {
		defer unix.Close(pidfd)
		waitPidfd(pidfd)
		t.supervisorExited()
	}()
	return t
}

// waitPidfd blocks until the process of pidfd has exited.
func waitPidfd(pidfd int) {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1)
		if n > 0 || (err != nil && !errors.Is(err, syscall.EINTR)) {
			return
		}
	}
}
