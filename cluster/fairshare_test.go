package cluster

import (
	"math"
	"testing"
	"time"
)

func TestDecayedUsage(t *testing.T) {
	now := at(0).Add(30 * 24 * time.Hour)
	week := 7 * 24 * time.Hour
	for _, tc := range []struct {
		name       string
		units      int
		start, end time.Time
		halfLife   time.Duration
		want       float64
	}{
		{"no decay: GPU-seconds", 8, now.Add(-time.Hour), now, 0, 8 * 3600},
		{"an hour just ended: nearly whole", 8, now.Add(-time.Hour), now, week, 8 * 3600 * 0.99794},
		{"an hour a half-life ago: half", 8, now.Add(-week - time.Hour), now.Add(-week), week, 8 * 3600 * 0.5 * 0.99794},
		{"running: counted up to now", 2, now.Add(-time.Hour), now.Add(time.Hour), 0, 2 * 3600},
		{"nothing held", 0, now.Add(-time.Hour), now, week, 0},
		{"not started yet", 4, now.Add(time.Hour), now.Add(2 * time.Hour), week, 0},
	} {
		got := DecayedUsage(tc.units, tc.start, tc.end, now, tc.halfLife)
		if math.Abs(got-tc.want) > tc.want*1e-4+1e-9 {
			t.Errorf("%s: %.2f; want %.2f", tc.name, got, tc.want)
		}
	}
}

func TestFairShareFactors(t *testing.T) {
	// Two accounts: one used everything (twice its share): 2^-2; the other
	// nothing: 1. A third with equal use to a fourth: each its share, 0.5.
	ml, vision := ShareGroup{Account: "ml"}, ShareGroup{Account: "vision"}
	f := FairShareFactors(map[ShareGroup]float64{ml: 100}, []ShareGroup{ml, vision})
	if f[ml] != 0.25 || f[vision] != 1 {
		t.Errorf("one account used all: %v; want ml 0.25, vision 1", f)
	}
	a, b := ShareGroup{Account: "a"}, ShareGroup{User: "a"} // an account and a user of one name
	f = FairShareFactors(map[ShareGroup]float64{a: 50, b: 50}, []ShareGroup{a, b})
	if f[a] != 0.5 || f[b] != 0.5 {
		t.Errorf("equal use: %v; want 0.5 each", f)
	}
	f = FairShareFactors(nil, []ShareGroup{a})
	if f[a] != 1 {
		t.Errorf("no use at all: %v; want 1", f)
	}
	j := &Job{User: "alice"}
	if g := j.FairShareGroup(); g != (ShareGroup{User: "alice"}) {
		t.Errorf("group of a job without account: %+v", g)
	}
	j.Account = "ml"
	if g := j.FairShareGroup(); g != ml {
		t.Errorf("group of a job of account ml: %+v", g)
	}
	if ml.Compare(vision) >= 0 || vision.Compare(ShareGroup{User: "alice"}) >= 0 || (ShareGroup{User: "b"}).Compare(ShareGroup{User: "a"}) <= 0 || ml.Compare(ml) != 0 {
		t.Error("groups are not ordered accounts first, by name")
	}
	if u := (Allocation{Nodes: []NodeAlloc{{Node: "n1", GPUs: []int{0, 1}}, {Node: "n2", GPUs: []int{0, 1}}}}).Units(); u != 4 {
		t.Errorf("units of two nodes of 2 GPUs: %d", u)
	}
	if u := (Allocation{Nodes: []NodeAlloc{{Node: "n1"}, {Node: "n2"}}}).Units(); u != 2 {
		t.Errorf("units of two CPU nodes: %d", u)
	}
}
