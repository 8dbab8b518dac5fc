package nodeagent

import (
	"fmt"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// A node the controller declared down has its tasks LOST there, and their
// GPUs may go to new jobs as soon as it registers again: the agent must
// stop its tasks, and see them end, before it registers again.
func TestReregisterStopsTasksFirst(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	h.srv.set(wireAssignment(21, t.TempDir(), script))
	task := waitStarted(t, rt, "phx-21-0-0")
	task.IgnoreSIGTERM(true) // so the agent must wait out the grace and SIGKILL
	h.srv.waitReport(t, 21, "RUNNING")

	type atRegister struct {
		exited  bool
		signals []syscall.Signal
	}
	seen := make(chan atRegister, 1)
	h.srv.mu.Lock()
	h.srv.onRegister = func(n int) {
		if n == 2 {
			_, exited := task.Exited()
			seen <- atRegister{exited: exited, signals: task.Signals()}
		}
	}
	h.srv.reregisterNext = true
	h.srv.mu.Unlock()

	select {
	case got := <-seen:
		if !got.exited {
			t.Error("the node registered again while its task still ran")
		}
		if want := []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}; !reflect.DeepEqual(got.signals, want) {
			t.Errorf("signals before registering again %v, want %v", got.signals, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the node never registered again")
	}
	r := h.srv.waitReport(t, 21, string(cluster.TaskLost))
	if r.Message != "node was declared down" || r.AgentShutdown {
		t.Errorf("LOST report message %q, agent_shutdown %v; want the node at fault", r.Message, r.AgentShutdown)
	}
	if got := states(h.srv.reportsFor(21)); !reflect.DeepEqual(got, []string{"RUNNING", "LOST"}) {
		t.Errorf("reports %v, want RUNNING then LOST", got)
	}
	// The stream still lists the task; it ended here, so it is not started
	// again.
	eventually(t, 10*time.Second, func() error {
		if n := len(rt.Specs()); n != 1 {
			return fmt.Errorf("%d starts", n)
		}
		if _, hb, _, _ := h.srv.counts(); hb < 4 {
			return fmt.Errorf("%d heartbeats", hb)
		}
		return nil
	})
}
