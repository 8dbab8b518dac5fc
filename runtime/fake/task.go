package fake

import (
	"context"
	"fmt"
	"sync"
	"syscall"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Task is a fake task. Tests get it from (*Runtime).Task or WaitStarted to
// look at what it received.
type Task struct {
	spec runtime.Spec

	mu         sync.Mutex
	ignoreTerm bool
	unkillable bool
	signals    []syscall.Signal
	jobSignals []JobSignal
	status     runtime.ExitStatus
	exited     chan struct{} // closed on exit
	closed     bool
}

var _ runtime.Task = (*Task)(nil)

func newTask(spec runtime.Spec, ignoreTerm bool) *Task {
	return &Task{spec: cloneSpec(spec), ignoreTerm: ignoreTerm, exited: make(chan struct{})}
}

// ID returns the Spec's ID.
func (t *Task) ID() string { return t.spec.ID }

// Spec returns the Spec the task was started with.
func (t *Task) Spec() runtime.Spec { return cloneSpec(t.spec) }

// Wait blocks until the task exits or ctx ends.
func (t *Task) Wait(ctx context.Context) (runtime.ExitStatus, error) {
	select {
	case <-t.exited:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.status, nil
	case <-ctx.Done():
		return runtime.ExitStatus{}, ctx.Err()
	}
}

// Signal records sig. SIGKILL ends a running task, and so does SIGTERM
// unless the task ignores it; other signals are only recorded.
// JobSignal is a job's own signal as SignalJob got it, or a step's as
// SignalStep did (OnStep).
type JobSignal struct {
	Signal syscall.Signal
	Batch  bool
	OnStep bool
	Step   uint32
}

// SignalJob records the job's signal; the fake task goes on running.
func (t *Task) SignalJob(ctx context.Context, sig syscall.Signal, batch bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.jobSignals = append(t.jobSignals, JobSignal{Signal: sig, Batch: batch})
	return nil
}

// SignalStep records the step's signal; the fake task goes on running.
func (t *Task) SignalStep(ctx context.Context, sig syscall.Signal, step uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.jobSignals = append(t.jobSignals, JobSignal{Signal: sig, OnStep: true, Step: step})
	return nil
}

// JobSignals returns the job signals delivered, in order.
func (t *Task) JobSignals() []JobSignal {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]JobSignal(nil), t.jobSignals...)
}

func (t *Task) Signal(ctx context.Context, sig syscall.Signal) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	t.signals = append(t.signals, sig)
	kill := !t.unkillable && (sig == syscall.SIGKILL || (sig == syscall.SIGTERM && !t.ignoreTerm))
	t.mu.Unlock()
	if kill {
		t.exit(runtime.ExitStatus{Code: 128 + int(sig), Signal: sig})
	}
	return nil
}

// Close marks the task released. Closing a task that still runs is an
// error: the agent must wait for the exit first.
func (t *Task) Close(context.Context) error {
	if !t.hasExited() {
		return fmt.Errorf("task %q: close while running: %w", t.spec.ID, cluster.ErrConflict)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	return nil
}

// IgnoreSIGTERM sets whether this task ignores SIGTERM.
func (t *Task) IgnoreSIGTERM(ignore bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ignoreTerm = ignore
}

// SetUnkillable sets whether this task outlives every signal, SIGKILL
// included, as a process the kernel keeps in uninterruptible sleep does:
// only (*Runtime).Exit ends it.
func (t *Task) SetUnkillable(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unkillable = on
}

// Signals returns the signals received so far, in order.
func (t *Task) Signals() []syscall.Signal {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]syscall.Signal(nil), t.signals...)
}

// Exited reports whether the task has exited, and how.
func (t *Task) Exited() (runtime.ExitStatus, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status, t.hasExited()
}

// Closed reports whether Close succeeded.
func (t *Task) Closed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// exit ends the task with st; only the first exit counts.
func (t *Task) exit(st runtime.ExitStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hasExited() {
		return
	}
	t.status = st
	close(t.exited)
}

func (t *Task) hasExited() bool {
	select {
	case <-t.exited:
		return true
	default:
		return false
	}
}
