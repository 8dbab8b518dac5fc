package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	container containerd.Container
	task      containerd.Task
	files     []*os.File // FIFO copy targets, closed on Close
	stopWait  context.CancelFunc

	done   chan struct{} // closed when the exit status arrived
	status runtime.ExitStatus
	err    error

	mu   sync.Mutex
	sent map[syscall.Signal]bool // signals delivered, to tell 128+sig from an exit code
}

var _ runtime.Task = (*task)(nil)

// startTask creates and starts container's task, subscribing to its exit
// before it starts so that the exit cannot be missed.
func (r *Runtime) startTask(ctx context.Context, spec runtime.Spec, c containerd.Container) (*task, error) {
	creator, files, err := ioCreator(spec)
	if err != nil {
		return nil, err
	}
	ct, err := c.NewTask(ctx, creator)
	if err != nil {
		closeFiles(files)
		return nil, fmt.Errorf("task %q: create task: %w", spec.ID, err)
	}
	waitCtx, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	exitCh, err := ct.Wait(waitCtx)
	if err == nil {
		err = ct.Start(ctx)
	}
	if err != nil {
		stopWait()
		ct.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill)
		closeFiles(files)
		return nil, fmt.Errorf("task %q: start: %w", spec.ID, err)
	}
	t := &task{
		id: spec.ID, namespace: r.namespace, container: c, task: ct, files: files,
		stopWait: stopWait, done: make(chan struct{}), sent: make(map[syscall.Signal]bool),
	}
	go t.watch(exitCh)
	return t, nil
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
	t.status = runtime.ExitStatus{Code: int(code)}
	t.mu.Lock()
	defer t.mu.Unlock()
	if sig := syscall.Signal(code - 128); code > 128 && t.sent[sig] {
		t.status.Signal = sig
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
// delivered through Signal.
func (t *task) Wait(ctx context.Context) (runtime.ExitStatus, error) {
	select {
	case <-t.done:
		return t.status, t.err
	case <-ctx.Done():
		return runtime.ExitStatus{}, ctx.Err()
	}
}

// Signal delivers sig to every process of the container. Signalling a task
// that has exited does nothing.
func (t *task) SignalJob(ctx context.Context, sig syscall.Signal, batch bool) error {
	ctx = t.ctx(ctx)
	if batch {
		if err := t.task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("task %q: signal %v to its init: %w", t.id, sig, err)
		}
		return nil
	}
	procs, err := t.task.Pids(ctx)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("task %q: list its processes: %w", t.id, err)
	}
	for _, p := range procs {
		if p.Pid == t.task.Pid() {
			continue
		}
		// Host PIDs: the agent shares the host's PID namespace.
		if err := syscall.Kill(int(p.Pid), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("task %q: signal %v to process %d: %w", t.id, sig, p.Pid, err)
		}
	}
	return nil
}

func (t *task) Signal(ctx context.Context, sig syscall.Signal) error {
	t.mu.Lock()
	t.sent[sig] = true
	t.mu.Unlock()
	err := t.task.Kill(t.ctx(ctx), sig, containerd.WithKillAll)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("task %q: signal %v: %w", t.id, sig, err)
	}
	return nil
}

// Close deletes the task (killing it if it still runs), the container and
// its snapshot. Deleting what is already gone is not an error.
func (t *task) Close(ctx context.Context) error {
	ctx = t.ctx(ctx)
	_, err := t.task.Delete(ctx, containerd.WithProcessKill)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("task %q: delete task: %w", t.id, err)
	}
	t.stopWait()
	closeFiles(t.files)
	t.files = nil
	err = t.container.Delete(ctx, containerd.WithSnapshotCleanup)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("task %q: delete container: %w", t.id, err)
	}
	return nil
}
