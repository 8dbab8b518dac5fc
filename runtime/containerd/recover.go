package containerd

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// Containers outlive the agent: containerd and each container's shim keep
// them, and the I/O keeper (taskio.go) keeps their output and their fence.
// A new run of the agent finds them again through containerd (Recover): its
// tasks are the containers labelled with its node.

// Lease records that the node's lease ends at deadline (runtime.Fencer):
// every task started from now on is fenced by its keeper.
func (r *Runtime) Lease(deadline runtime.BootTime) error {
	if r.dir == "" {
		return fmt.Errorf("lease: the containerd runtime has no state directory")
	}
	// As in the process runtime: from the first attempt on, tasks are
	// fenced, even if this write fails.
	r.leased.Store(true)
	r.leaseMu.Lock()
	defer r.leaseMu.Unlock()
	return runtime.WriteLease(r.dir, deadline)
}

// FencesAll reports whether every task of the runtime is fenced by the
// lease: false without a state directory, or once Recover found a running
// task started without a lease (by an agent before leases, or before its
// first lease). The agent then does not claim to fence.
func (r *Runtime) FencesAll() bool { return r.dir != "" && !r.unfenced.Load() }

// Recover returns a task for every container of the runtime's node
// (WithNode) in its namespace:
// running, stopped (Wait returns its exit status, or its fence, at once),
// or without a task (it died with the host's boot, or before it started:
// Wait returns runtime.ErrLost). Close deletes each, as for a task Start
// returned.
func (r *Runtime) Recover(ctx context.Context) ([]runtime.Task, error) {
	ctx = r.ctx(ctx)
	cs, err := r.client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("containerd: list containers: %w", err)
	}
	var tasks []runtime.Task
	var errs []error
	for _, c := range cs {
		labels, err := c.Labels(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("container %q: labels: %w", c.ID(), err))
			continue
		}
		if labels[labelNode] != r.node {
			continue // another node's, or not Phalanx's
		}
		t, err := r.recovered(ctx, c, labels)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tasks = append(tasks, t)
	}
	return tasks, errors.Join(errs...)
}

// recovered makes a task of container c.
func (r *Runtime) recovered(ctx context.Context, c containerd.Container, labels map[string]string) (*task, error) {
	ct, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		t := r.newTask(c.ID(), c, nil)
		t.err = fmt.Errorf("task %q: %w (its container has no task)", c.ID(), runtime.ErrLost)
		close(t.done)
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("container %q: task: %w", c.ID(), err)
	}
	t := r.newTask(c.ID(), c, ct)
	t.sent = parseSignals(labels[labelSignals])
	// Subscribed before the status is read, so that an exit in between is
	// not missed.
	exitCh, err := ct.Wait(t.waitCtx(ctx))
	if err != nil {
		t.stopWait()
		return nil, fmt.Errorf("task %q: wait: %w", c.ID(), err)
	}
	st, err := ct.Status(ctx)
	if err != nil {
		t.stopWait()
		return nil, fmt.Errorf("task %q: status: %w", c.ID(), err)
	}
	if st.Status == containerd.Stopped {
		t.stopWait()
		t.exited(st.ExitStatus)
		close(t.done)
		return t, nil
	}
	if labels[labelLeased] != "1" {
		r.unfenced.Store(true)
	}
	go t.watch(exitCh)
	return t, nil
}
