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
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.empty {
		return nil
	}
	targets := []int{t.pgid} // the leader: the batch script
	if !batch {
		var err error
		if targets, err = groupMembers(t.pgid, t.pgid); err != nil {
			return fmt.Errorf("task %q: list its processes: %w", t.id, err)
		}
	}
	for _, pid := range targets {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("task %q: signal %v to process %d: %w", t.id, sig, pid, err)
		}
	}
	return nil
}

// Signal sends sig to every process of the group. Signalling a task whose
// group is gone does nothing.
func (t *task) Signal(ctx context.Context, sig syscall.Signal) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.empty {
		return nil
	}
	err := syscall.Kill(-t.pgid, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("task %q: signal %v to group %d: %w", t.id, sig, t.pgid, err)
	}
	return nil
}

// Close does nothing: a process holds nothing once it has been reaped.
func (t *task) Close(context.Context) error { return nil }
