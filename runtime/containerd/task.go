package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/namespaces"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// task is a started container task.
type task struct {
	id        string
	namespace string
	dir       string // the runtime's state directory, or empty
	container containerd.Container
	task      containerd.Task
	stopWait  context.CancelFunc

	done   chan struct{} // closed when the exit status arrived
	status runtime.ExitStatus
	err    error

	mu   sync.Mutex
	sent map[syscall.Signal]bool // signals delivered, to tell 128+sig from an exit code
}

var _ runtime.Task = (*task)(nil)

// startTask creates and starts container's task, subscribing to its exit
// before it starts so that the exit cannot be missed. Its output goes
// through an I/O keeper, which fences it when leased.
func (r *Runtime) startTask(ctx context.Context, spec runtime.Spec, c containerd.Container, leased bool) (*task, error) {
	if err := checkOutputs(spec); err != nil {
		return nil, err
	}
	lease := ""
	if leased {
		lease = filepath.Join(r.dir, runtime.LeaseFile)
	}
	if r.dir != "" {
		os.Remove(fencedPath(r.dir, spec.ID)) // an earlier task's with this ID
	}
	creator, err := r.taskIO(spec, lease)
	if err != nil {
		return nil, err
	}
	ct, err := c.NewTask(ctx, creator)
	if err != nil {
		return nil, fmt.Errorf("task %q: create task: %w", spec.ID, err)
	}
	t := r.newTask(spec.ID, c, ct)
	exitCh, err := ct.Wait(t.waitCtx(ctx))
	if err == nil {
		err = ct.Start(ctx)
	}
	if err != nil {
		t.stopWait()
		ct.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill)
		return nil, fmt.Errorf("task %q: start: %w", spec.ID, err)
	}
	go t.watch(exitCh)
	return t, nil
}

func (r *Runtime) newTask(id string, c containerd.Container, ct containerd.Task) *task {
	return &task{
		id: id, namespace: r.namespace, dir: r.dir, container: c, task: ct,
		stopWait: func() {}, done: make(chan struct{}), sent: make(map[syscall.Signal]bool),
	}
}

// waitCtx returns the context of the task's exit subscription, which
// Close cancels.
func (t *task) waitCtx(ctx context.Context) context.Context {
	waitCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	t.stopWait = stop
	return waitCtx
}

func (t *task) watch(exitCh <-chan containerd.ExitStatus) {
	defer close(t.done)
	es, ok := <-exitCh
	if !ok {
		t.err = fmt.Errorf("task %q: exit status stream closed", t.id)
		return
	}
	code, _, err := es.Result()
	if err != nil {
		t.err = fmt.Errorf("task %q: wait: %w", t.id, err)
		return
	}
	t.exited(code)
}

// exited records the task's exit code: death by a signal the task was
// sent, and a fence its keeper recorded.
func (t *task) exited(code uint32) {
	t.status = runtime.ExitStatus{Code: int(code)}
	t.mu.Lock()
	if sig := syscall.Signal(code - 128); code > 128 && t.sent[sig] {
		t.status.Signal = sig
	}
	t.mu.Unlock()
	if t.dir != "" {
		if _, err := os.Stat(fencedPath(t.dir, t.id)); err == nil {
			t.err = fmt.Errorf("task %q: %w", t.id, runtime.ErrFenced)
		}
	}
}

func (t *task) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, t.namespace)
}

// ID returns the Spec's ID, which is also the container's.
func (t *task) ID() string { return t.id }

// Wait returns the exit status of the container's first process. When it
// has exited the shim has killed everything else the container ran.
// An exit code of 128+n is reported as death by signal n when n was
// delivered through Signal. A task its keeper killed at the end of the
// node's lease returns its status and an error wrapping
// runtime.ErrFenced.
func (t *task) Wait(ctx context.Context) (runtime.ExitStatus, error) {
	select {
	case <-t.done:
		return t.status, t.err
	case <-ctx.Done():
		return runtime.ExitStatus{}, ctx.Err()
	}
}

// SignalJob delivers a job's signal: with batch to the container's init
// (the batch script), else to its other processes. Signalling a task that
// has exited does nothing.
func (t *task) SignalJob(ctx context.Context, sig syscall.Signal, batch bool) error {
	if t.task == nil {
		return nil // lost: nothing runs
	}
	ctx = t.ctx(ctx)
	if batch {
		if err := t.task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("task %q: signal %v to its init: %w", t.id, sig, err)
		}
		return nil
	}
	return t.signalOthers(ctx, sig, func(int) bool { return true })
}

// SignalStep delivers sig to the container's processes in step
// (runtime.InStep), never its init.
func (t *task) SignalStep(ctx context.Context, sig syscall.Signal, step uint32) error {
	if t.task == nil {
		return nil // lost: nothing runs
	}
	return t.signalOthers(t.ctx(ctx), sig, func(pid int) bool { return runtime.InStep(pid, step) })
}

// signalOthers delivers sig to the container's processes but its init for
// which pick is true.
func (t *task) signalOthers(ctx context.Context, sig syscall.Signal, pick func(pid int) bool) error {
	procs, err := t.task.Pids(ctx)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("task %q: list its processes: %w", t.id, err)
	}
	for _, p := range procs {
		// Host PIDs: the agent shares the host's PID namespace.
		if p.Pid == t.task.Pid() || !pick(int(p.Pid)) {
			continue
		}
		if err := syscall.Kill(int(p.Pid), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("task %q: signal %v to process %d: %w", t.id, sig, p.Pid, err)
		}
	}
	return nil
}

func (t *task) Signal(ctx context.Context, sig syscall.Signal) error {
	if t.task == nil {
		return nil // lost: nothing runs
	}
	t.mu.Lock()
	first := !t.sent[sig]
	t.sent[sig] = true
	sent := formatSignals(t.sent)
	t.mu.Unlock()
	if first {
		// Recorded before it is sent, for the agent's next run.
		if _, err := t.container.SetLabels(t.ctx(ctx), map[string]string{labelSignals: sent}); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("task %q: record signal %v: %w", t.id, sig, err)
		}
	}
	err := t.task.Kill(t.ctx(ctx), sig, containerd.WithKillAll)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("task %q: signal %v: %w", t.id, sig, err)
	}
	return nil
}

// Close deletes the task (killing it if it still runs, which ends its
// keeper), the container and its snapshot, and the task's fence file. Deleting what is already gone is not an error.
func (t *task) Close(ctx context.Context) error {
	ctx = t.ctx(ctx)
	if t.task != nil {
		_, err := t.task.Delete(ctx, containerd.WithProcessKill)
		if err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("task %q: delete task: %w", t.id, err)
		}
	}
	t.stopWait()
	err := t.container.Delete(ctx, containerd.WithSnapshotCleanup)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("task %q: delete container: %w", t.id, err)
	}
	if t.dir != "" {
		os.Remove(fencedPath(t.dir, t.id))
		os.Remove(filepath.Join(t.dir, t.id+".io.log"))
	}
	return nil
}
