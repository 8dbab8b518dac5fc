package fake

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Name is what (*Runtime).Name returns.
const Name = "fake"

// Runtime is an in-memory runtime. It is safe for concurrent use.
type Runtime struct {
	ignoreTerm bool

	mu        sync.Mutex
	tasks     map[string]*Task // latest task per ID
	specs     []runtime.Spec   // every Spec started, in order
	failStart map[string]error
	changed   chan struct{} // closed and replaced whenever a task starts
}

var _ runtime.Runtime = (*Runtime)(nil)

// Option configures a Runtime.
type Option func(*Runtime)

// WithIgnoreSIGTERM makes every task ignore SIGTERM (it still records it),
// like a program that traps it; only SIGKILL or Exit ends such a task.
func WithIgnoreSIGTERM() Option {
	return func(r *Runtime) { r.ignoreTerm = true }
}

// New returns an empty fake runtime.
func New(opts ...Option) *Runtime {
	r := &Runtime{
		tasks:     make(map[string]*Task),
		failStart: make(map[string]error),
		changed:   make(chan struct{}),
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Name returns "fake".
func (r *Runtime) Name() string { return Name }

// Start records spec and returns a running task. It fails when a task with
// the same ID is still running, or when FailStart armed a failure for it.
func (r *Runtime) Start(ctx context.Context, spec runtime.Spec) (runtime.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err, ok := r.failStart[spec.ID]; ok {
		delete(r.failStart, spec.ID)
		return nil, err
	}
	if old, ok := r.tasks[spec.ID]; ok && !old.hasExited() {
		return nil, fmt.Errorf("task %q is already running: %w", spec.ID, cluster.ErrConflict)
	}
	t := newTask(spec, r.ignoreTerm)
	r.tasks[spec.ID] = t
	r.specs = append(r.specs, cloneSpec(spec))
	close(r.changed)
	r.changed = make(chan struct{})
	return t, nil
}

// FailStart makes the next Start of task id return err instead of starting.
func (r *Runtime) FailStart(id string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failStart[id] = err
}

// Exit ends task id with exit code code, as if its program returned it.
func (r *Runtime) Exit(id string, code int) error {
	t, ok := r.Task(id)
	if !ok {
		return fmt.Errorf("task %q: %w", id, cluster.ErrNotFound)
	}
	t.exit(runtime.ExitStatus{Code: code})
	return nil
}

// Task returns the latest task started with id.
func (r *Runtime) Task(id string) (*Task, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tasks[id]
	return t, ok
}

// WaitStarted blocks until a task with id has been started (returning at
// once if one was), or ctx ends.
func (r *Runtime) WaitStarted(ctx context.Context, id string) (*Task, error) {
	for {
		r.mu.Lock()
		t, ok := r.tasks[id]
		changed := r.changed
		r.mu.Unlock()
		if ok {
			return t, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for task %q to start: %w", id, ctx.Err())
		}
	}
}

// Specs returns every Spec started so far, in start order.
func (r *Runtime) Specs() []runtime.Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]runtime.Spec, len(r.specs))
	for i, s := range r.specs {
		out[i] = cloneSpec(s)
	}
	return out
}

// Running returns the IDs of the tasks that have not exited, sorted.
func (r *Runtime) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id, t := range r.tasks {
		if !t.hasExited() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func cloneSpec(s runtime.Spec) runtime.Spec {
	s.Argv = append([]string(nil), s.Argv...)
	s.Env = append([]string(nil), s.Env...)
	s.GPUs = append([]int(nil), s.GPUs...)
	s.Mounts = append([]runtime.Mount(nil), s.Mounts...)
	return s
}
