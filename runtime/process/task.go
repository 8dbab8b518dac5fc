package process

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// firstPoll is the first pause between two checks of the process group; it
// doubles up to the runtime's maximum.
const firstPoll = time.Millisecond

// task is one process group under its supervisor. Its leader's PID is the
// group ID.
type task struct {
	id   string
	pgid int
	r    *Runtime

	exited chan struct{} // closed once the supervisor has ended
	status runtime.ExitStatus
	err    error // the supervisor recorded no end

	mu    sync.Mutex
	empty bool // the group was seen empty; its ID may be reused
}

var _ runtime.Task = (*task)(nil)

func newTask(id string, pgid int, r *Runtime) *task {
	return &task{id: id, pgid: pgid, r: r, exited: make(chan struct{})}
}

// supervisorExited reads how the task ended, as its supervisor recorded
// it. A supervisor that ended without recording it (killed, say) leaves a
// group of unknown fate: what is left of it is killed, and the task is
// lost.
func (t *task) supervisorExited() {
	defer close(t.exited)
	e, ok, err := readExit(exitPath(t.r.dir, t.id))
	switch {
	case err != nil:
		t.err = fmt.Errorf("task %q: %w: %v", t.id, runtime.ErrLost, err)
	case !ok:
		t.err = fmt.Errorf("task %q: %w", t.id, runtime.ErrLost)
	default:
		t.status = e.status()
		if e.Fenced {
			t.err = fmt.Errorf("task %q: %w", t.id, runtime.ErrFenced)
		}
		t.markEmpty()
		return
	}
	syscall.Kill(-t.pgid, syscall.SIGKILL)
	pause := firstPoll
	for deadline := time.Now().Add(killWait); groupAlive(t.pgid) && time.Now().Before(deadline); {
		time.Sleep(pause)
		pause = min(2*pause, t.r.maxPoll)
	}
	t.markEmpty()
}

// killWait bounds the wait for a lost task's group to vanish after
// SIGKILL.
const killWait = 30 * time.Second

func (t *task) markEmpty() {
	t.mu.Lock()
	t.empty = true
	t.mu.Unlock()
}

func exitStatus(ws syscall.WaitStatus) runtime.ExitStatus {
	if ws.Signaled() {
		return runtime.ExitStatus{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}
	}
	return runtime.ExitStatus{Code: ws.ExitStatus()}
}

// ID returns the Spec's ID.
func (t *task) ID() string { return t.id }

// PGID returns the task's process group ID, its leader's PID.
func (t *task) PGID() int { return t.pgid }

// Wait returns the leader's exit status once the leader has exited and no
// process of the group is left, as the supervisor saw it. It returns an
// error wrapping runtime.ErrLost when the supervisor ended without saying,
// and one wrapping runtime.ErrFenced, with the status, when the supervisor
// killed the task at the end of the node's lease.
func (t *task) Wait(ctx context.Context) (runtime.ExitStatus, error) {
	select {
	case <-t.exited:
	case <-ctx.Done():
		return runtime.ExitStatus{}, ctx.Err()
	}
	return t.status, t.err
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

// SignalStep sends sig to the group's processes in step (runtime.InStep),
// never its leader.
func (t *task) SignalStep(ctx context.Context, sig syscall.Signal, step uint32) error {
	return t.kill(ctx, sig, func() ([]int, error) {
		pids, err := groupMembers(t.pgid, t.pgid)
		return slices.DeleteFunc(pids, func(pid int) bool { return !runtime.InStep(pid, step) }), err
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

// Close removes the task's records once it has ended: the agent has
// reported the end, and no later run of the agent needs to find it.
func (t *task) Close(context.Context) error {
	select {
	case <-t.exited:
	default:
		return fmt.Errorf("task %q: still running: %w", t.id, cluster.ErrConflict)
	}
	return removeRecords(t.r.dir, t.id)
}
