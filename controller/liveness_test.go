package controller

import (
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// liveness over one term: a new term gives every node a full TTL and
// counts none as heard; a node silent past the TTL is found once while
// its DOWN is on its way, during which it may not register and its
// heartbeat is not live; a stopping agent's node is unheard again.
func TestLivenessOverATerm(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := []*cluster.Node{{Name: "a", State: cluster.NodeUp}, {Name: "b", State: cluster.NodeUp}, {Name: "c", State: cluster.NodeDown}}
	var l liveness
	l.reset(nodes, t0)
	if u := l.unheard(nodes); len(u) != 3 {
		t.Fatalf("unheard at the start of a term: %v; want every node", u)
	}
	if live, first := l.seen("a", t0.Add(10*time.Second)); !live || !first {
		t.Errorf("first heartbeat of a: live %v, first %v; want both", live, first)
	}
	if _, first := l.seen("a", t0.Add(11*time.Second)); first {
		t.Error("second heartbeat of a counted as the first")
	}
	if s := l.silent(nodes, t0.Add(30*time.Second), 30*time.Second, idle); len(s) != 0 {
		t.Errorf("silent at exactly the TTL: %v; want none", s)
	}
	s := l.silent(nodes, t0.Add(31*time.Second), 30*time.Second, idle)
	if len(s) != 1 || s[0].name != "b" || s[0].silentFor != 31*time.Second {
		t.Fatalf("silent past the TTL: %+v; want b, 31s (c is DOWN already)", s)
	}
	if again := l.silent(nodes, t0.Add(40*time.Second), 30*time.Second, idle); len(again) != 0 {
		t.Errorf("b found silent twice while its DOWN is on its way: %v", again)
	}
	if l.registering("b", t0.Add(41*time.Second)) {
		t.Error("b registered while its DOWN is on its way")
	}
	if live, _ := l.seen("b", t0.Add(41*time.Second)); live {
		t.Error("b's heartbeat is live while its DOWN is on its way")
	}
	l.declared([]string{"b"})
	if !l.registering("b", t0.Add(42*time.Second)) {
		t.Error("b may not register once its DOWN applied")
	}
	l.stopping("a", t0.Add(50*time.Second))
	if seen, heard := l.of("a"); heard || !seen.Equal(t0.Add(50*time.Second)) {
		t.Errorf("a after its agent stops: seen %v, heard %v; want not heard", seen, heard)
	}
	if u := l.unheard(nodes); !u["a"] || u["b"] {
		t.Errorf("unheard %v; want a (stopping) and not b (heard)", u)
	}
}

// idle says no node runs a task: a DOWN node is never found silent.
func idle(string) bool { return false }

// A DOWN node where tasks still run (set DOWN by an administrator, their
// ends not reported yet) is found silent past the TTL, so that its tasks,
// fenced by then, are declared lost and their jobs restart; an idle DOWN
// node is not.
func TestDownNodeWithTasksFoundSilent(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := []*cluster.Node{{Name: "a", State: cluster.NodeDown}, {Name: "b", State: cluster.NodeDown}}
	var l liveness
	l.reset(nodes, t0)
	busy := func(n string) bool { return n == "a" }
	s := l.silent(nodes, t0.Add(31*time.Second), 30*time.Second, busy)
	if len(s) != 1 || s[0].name != "a" {
		t.Fatalf("silent past the TTL: %+v; want a (DOWN, running tasks), not b (DOWN, idle)", s)
	}
}
