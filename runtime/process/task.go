package process

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// firstPoll is the first pause between two checks of the process group; it
// doubles up to the runtime's maximum.
const firstPoll = time.Millisecond

// task is one started process group. Its leader's PID is the group ID.
type task struct {
	id      string
	pgid    int
	maxPoll time.Duration

	exited chan struct{} // closed once the leader has been reaped
	status runtime.ExitStatus
	err    error // reaping failed

	mu    sync.Mutex
	empty bool // the group was seen empty; its ID may be reused
}

var _ runtime.Task = (*task)(nil)

func newTask(id string, cmd *exec.Cmd, maxPoll time.Duration) *task {
	t := &task{
		id:      id,
		pgid:    cmd.Process.Pid,
		maxPoll: maxPoll,
		exited:  make(chan struct{}),
	}
	go t.reap(cmd)
	return t
}

// reap waits for the group leader and records how it ended.
func (t *task) reap(cmd *exec.Cmd) {
	defer close(t.exited)
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.err = fmt.Errorf("task %q: wait: %w", t.id, err)
		return
	}
	t.status = exitStatus(cmd.ProcessState.Sys().(syscall.WaitStatus))
}

func exitStatus(ws syscall.WaitStatus) runtime.ExitStatus {
	if ws.Signaled() {
		return runtime.ExitStatus{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}
	}
	return runtime.ExitStatus{Code: ws.ExitStatus()}
}

// ID returns the Spec's ID.
func (t *task) ID() string { return t.id }

// PGID returns the task's process group ID, its leader's PID. The agent
// records it so that, should the agent die, its next run can kill what is
// left of the group.
func (t *task) PGID() int { return t.pgid }

// Wait returns the leader's exit status once the leader has exited and no
// process of the group is left.
func (t *task) Wait(ctx context.Context) (runtime.ExitStatus, error) {
	select {
	case <-t.exited:
	case <-ctx.Done():
		return runtime.ExitStatus{}, ctx.Err()
	}
	if t.err != nil {
		return runtime.ExitStatus{}, t.err
	}
	if err := t.waitGroupEmpty(ctx); err != nil {
		return runtime.ExitStatus{}, err
	}
	return t.status, nil
}

func (t *task) waitGroupEmpty(ctx context.Context) error {
	pause := firstPoll
	for groupAlive(t.pgid) {
		timer := time.NewTimer(pause)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
		pause = min(2*pause, t.maxPoll)
	}
	t.mu.Lock()
	t.empty = true
	t.mu.Unlock()
	return nil
}

// SignalJob sends the job's signal to the group's leader (the batch
// script) or to every other process of the group.
func (t *task) SignalJob(ctx context.Context, sig syscall.Signal, batch bool) error {
	return t.kill(ctx, sig, func() ([]int, error) {
		if batch {
			return []int{t.pgid}, nil
		}
		return groupMembers(t.pgid, t.pgid)
	})
}

// Signal sends sig to every process of the group. Signalling a task whose
// group is gone does nothing.
func (t *task) Signal(ctx context.Context, sig syscall.Signal) error {
	return t.kill(ctx, sig, func() ([]int, error) { return []int{-t.pgid}, nil })
}

// kill sends sig to each of the targets (a negative one: a process group)
// unless the group is known to be gone.
func (t *task) kill(ctx context.Context, sig syscall.Signal, targets func() ([]int, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.empty {
		return nil
	}
	pids, err := targets()
	if err != nil {
		return fmt.Errorf("task %q: list its processes: %w", t.id, err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("task %q: signal %v to %d: %w", t.id, sig, pid, err)
		}
	}
	return nil
}

// Close does nothing: a process holds nothing once it has been reaped.
func (t *task) Close(context.Context) error { return nil }
