package cluster

import (
	"fmt"
	"testing"
	"time"
)

func TestSetHealth(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	up := &Node{Name: "n1", State: NodeUp}
	ours := &Node{Name: "n1", State: NodeDrain, Reason: "disk: full", ReasonUser: SystemUser, Health: "disk: full"}
	admin := &Node{Name: "n1", State: NodeDrain, Reason: "maintenance", ReasonUser: "alice"}
	adminSick := &Node{Name: "n1", State: NodeDrain, Reason: "maintenance", ReasonUser: "alice", Health: "disk: full"}
	for _, tc := range []struct {
		name     string
		n        *Node
		problems string
		// want: the state, reason and reason user after, and the event
		// ("" when nothing changes).
		state        NodeState
		reason, user string
		kind         EventKind
		message      string
	}{
		{"healthy stays", up, "", NodeUp, "", "", "", ""},
		{"a problem drains", up, "disk: full", NodeDrain, "disk: full", SystemUser, EventDrained, "disk: full"},
		{"the same problem: nothing", ours, "disk: full", NodeDrain, "disk: full", SystemUser, "", ""},
		{"another problem: the drain's reason", ours, "shm: 64 MB", NodeDrain, "shm: 64 MB", SystemUser, EventDrained, "shm: 64 MB"},
		{"passing resumes", ours, "", NodeUp, "", SystemUser, EventResumed, "health checks pass (was DRAIN: disk: full)"},
		{"an admin's drain stays", admin, "disk: full", NodeDrain, "maintenance", "alice", EventUnhealthy, "disk: full (left DRAIN by alice)"},
		{"and the same again: nothing", adminSick, "disk: full", NodeDrain, "maintenance", "alice", "", ""},
		{"passing under an admin's drain", adminSick, "", NodeDrain, "maintenance", "alice", EventHealthy, "health checks pass (left DRAIN by alice)"},
		{"an admin's down stays", &Node{Name: "n1", State: NodeDown, Reason: "PSU"}, "disk: full", NodeDown, "PSU", "", EventUnhealthy, "disk: full (left DOWN)"},
		{"UP with an old verdict, passing", &Node{Name: "n1", State: NodeUp, Health: "disk: full"}, "", NodeUp, "", "", EventHealthy, "health checks pass"},
		{"UP with the same verdict still drains", &Node{Name: "n1", State: NodeUp, Health: "disk: full"}, "disk: full", NodeDrain, "disk: full", SystemUser, EventDrained, "disk: full"},
		// Drained by the checks before verdicts were kept (an upgrade).
		{"our drain without a verdict", &Node{Name: "n1", State: NodeDrain, Reason: "disk: full", ReasonUser: SystemUser}, "disk: full", NodeDrain, "disk: full", SystemUser, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := *tc.n
			u, e, changed := SetHealth(tc.n, tc.problems, t0)
			if u.State != tc.state || u.Reason != tc.reason || u.ReasonUser != tc.user {
				t.Errorf("node %s %q by %q, want %s %q by %q", u.State, u.Reason, u.ReasonUser, tc.state, tc.reason, tc.user)
			}
			if changed != (tc.kind != "") || e.Kind != tc.kind || e.Message != tc.message {
				t.Errorf("changed %v, event %s %q; want %s %q", changed, e.Kind, e.Message, tc.kind, tc.message)
			}
			if changed && (u.Health != tc.problems || !e.Time.Equal(t0) || e.User != SystemUser || e.Node != "n1") {
				t.Errorf("node health %q, event %+v", u.Health, e)
			}
			if changed && u.State != before.State && !u.StateTime.Equal(t0) {
				t.Errorf("state changed at %v, want %v", u.StateTime, t0)
			}
			if tc.n.Health != before.Health || tc.n.State != before.State {
				t.Errorf("the node given was changed in place")
			}
		})
	}
}

func TestNodeEventMessages(t *testing.T) {
	n := &Node{Name: "gpu001", GPUs: 8, GPUModel: "H100", CPUs: 1, MemoryMB: 1024, NICs: make([]NIC, 4), State: NodeUp}
	if e := RegisteredEvent(nil, n); e.Message != "8 GPUs (H100), 4 NICs, 1 CPU, 1024 MB" || e.Kind != EventRegistered || e.User != SystemUser {
		t.Errorf("new node: %+v", e)
	}
	drained := &Node{Name: "gpu001", State: NodeDrain, Reason: "xid 79", ReasonUser: "alice"}
	n.GPUModel, n.GPUs, n.State, n.Reason = "", 1, NodeDrain, "xid 79"
	if e := RegisteredEvent(drained, n); e.Message != "1 GPU, 4 NICs, 1 CPU, 1024 MB; stays DRAIN: xid 79" {
		t.Errorf("drained node: %q", e.Message)
	}
	resumed := &Node{Name: "gpu001", State: NodeUp, ReasonUser: "bob", StateTime: time.Unix(5, 0)}
	if e := StateEvent(drained, resumed, "bob"); e.Kind != EventResumed || e.Message != "was DRAIN: xid 79" || e.User != "bob" || !e.Time.Equal(time.Unix(5, 0)) {
		t.Errorf("resume: %+v", e)
	}
	down := &Node{Name: "gpu001", State: NodeDown, Reason: "PSU"}
	if e := StateEvent(resumed, down, "bob"); e.Kind != EventDown || e.Message != "PSU" {
		t.Errorf("down: %+v", e)
	}
}

// A requeue's event names the nodes the next attempt avoids, a bounded
// number of them; a job without attempt records (from before they were
// kept) gets its reason alone.
func TestRequeuedEventMessage(t *testing.T) {
	j := &Job{ID: 9, Attempt: 12, Restart: RestartPolicy{MaxRestarts: 20, On: DefaultRestartOn}, Reason: "restarted after NODE_FAIL (x)"}
	for i := range 12 {
		j.Attempts = append(j.Attempts, Attempt{Attempt: i, State: JobNodeFail, Reason: "Not responding", Cause: RestartNode,
			FaultNode: fmt.Sprintf("n%d", i), EndTime: at(i)})
	}
	e := RequeuedEvent(j, nil)
	want := "requeued because node n11 failed: Not responding (attempt 11 ended NODE_FAIL; restart 12 of 20; attempt 12 avoids n0,n1,n2,n3,n4,n5,n6,n7 and 4 more while it can)"
	if e.Message != want || !e.Time.Equal(at(11)) || e.Job != 9 || e.Kind != EventRequeued {
		t.Errorf("event %+v;\nwant %q at %v", e, want, at(11))
	}
	old := &Job{ID: 3, Attempt: 1, Reason: "Preempted"}
	if e := RequeuedEvent(old, nil); e.Message != "requeued: Preempted" {
		t.Errorf("event of a job without attempt records: %q", e.Message)
	}
}
