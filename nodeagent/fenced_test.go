package nodeagent

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// fencingRuntime is a fake runtime whose tasks, once fence is set, end as
// a supervisor's fence ends them: Wait returns runtime.ErrFenced.
type fencingRuntime struct {
	*fake.Runtime
	fence atomic.Bool
}

func (r *fencingRuntime) Start(ctx context.Context, spec runtime.Spec) (runtime.Task, error) {
	t, err := r.Runtime.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return fencingTask{Task: t, r: r}, nil
}

type fencingTask struct {
	runtime.Task
	r *fencingRuntime
}

func (t fencingTask) Wait(ctx context.Context) (runtime.ExitStatus, error) {
	st, err := t.Task.Wait(ctx)
	if err == nil && t.r.fence.Load() {
		return st, fmt.Errorf("task %q: %w", t.ID(), runtime.ErrFenced)
	}
	return st, err
}

// A task killed at the node's lease's end is reported LOST and says it
// was fenced: the controller then knows its node is not at fault for it
// (a majority of the controllers down ends every node's lease).
func TestFencedTaskIsReportedFenced(t *testing.T) {
	rt := &fencingRuntime{Runtime: fake.New()}
	h := newHarness(t, rt, nil)
	h.srv.set(wireAssignment(12, t.TempDir(), script))
	waitStarted(t, rt.Runtime, "phx-12-0-0")
	h.srv.waitReport(t, 12, "RUNNING")
	rt.fence.Store(true)
	if err := rt.Exit("phx-12-0-0", 137); err != nil {
		t.Fatal(err)
	}
	r := h.srv.waitReport(t, 12, string(cluster.TaskLost))
	if !r.Fenced || r.AgentShutdown {
		t.Errorf("LOST report of a fenced task: fenced %v, agent_shutdown %v; want fenced alone (%q)", r.Fenced, r.AgentShutdown, r.Message)
	}

	// A task lost otherwise (its runtime lost track of it) is not fenced.
	rt2 := fake.New()
	h2 := newHarness(t, rt2, nil)
	h2.srv.set(wireAssignment(13, t.TempDir(), script))
	waitStarted(t, rt2, "phx-13-0-0")
	h2.srv.waitReport(t, 13, "RUNNING")
	h2.stop(t)
	if r := h2.srv.reportsFor(13); len(r) != 2 || r[1].State != string(cluster.TaskLost) || r[1].Fenced {
		t.Errorf("reports of a task lost to a shutdown: %v; want LOST, not fenced", r)
	}
}
