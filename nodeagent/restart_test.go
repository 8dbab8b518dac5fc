package nodeagent

import (
	"reflect"
	"testing"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// An agent that restarts under a running task must not start it a second
// time: the controller has it RUNNING, this agent knows nothing of it.
func TestTaskStartedByAnEarlierAgentRunIsReportedLost(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	as := wireAssignment(4, t.TempDir(), script)
	as.Job.Tasks = []*phalanxv1.Task{{Rank: 0, Node: node, State: "RUNNING"}}
	h.srv.set(as)

	r := h.srv.waitReport(t, 4, "LOST")
	if r.Message != "node agent restarted while the task ran" {
		t.Errorf("LOST report message %q", r.Message)
	}
	if got := states(h.srv.reportsFor(4)); !reflect.DeepEqual(got, []string{"LOST"}) {
		t.Errorf("reports %v; want only LOST", got)
	}
	if specs := rt.Specs(); len(specs) != 0 {
		t.Errorf("the task was started again: %v", specs)
	}
}
