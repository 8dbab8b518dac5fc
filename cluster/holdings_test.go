package cluster

import (
	"errors"
	"testing"
)

// Holdings: what one job takes, the next cannot; once released, it can;
// an exclusive job waits until the node is empty, and keeps it whole.
func TestHoldingsTakeAndRelease(t *testing.T) {
	nodes := map[string]*Node{"n1": {Name: "n1", GPUs: 4, CPUs: 8, MemoryMB: 100, State: NodeUp}}
	h := NewHoldings(func(name string) *Node { return nodes[name] }, nil)
	shared := &Job{GPUsPerNode: 2}
	whole := &Job{GPUsPerNode: 1, Exclusive: true}
	on := func(gpus ...int) Allocation {
		return Allocation{Nodes: []NodeAlloc{{Node: "n1", GPUs: gpus, CPUs: 2, MemoryMB: 10}}}
	}
	a := on(0, 1)
	if err := h.Check(shared, a); err != nil {
		t.Fatal(err)
	}
	h.Take(a, false)
	for _, tc := range []struct {
		j    *Job
		a    Allocation
		want error
	}{
		{shared, on(1, 2), ErrConflict},      // GPU 1 is held
		{whole, on(0, 1, 2, 3), ErrConflict}, // the node is in use
		{shared, on(2), ErrInvalid},          // fewer than asked
		{shared, on(2, 3), nil},              // free
	} {
		if err := h.Check(tc.j, tc.a); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("Check(exclusive %v, GPUs %v) = %v, want %v", tc.j.Exclusive, tc.a.Nodes[0].GPUs, err, tc.want)
		}
	}
	h.Release(a, false)
	if err := h.Check(whole, on(2, 3)); !errors.Is(err, ErrInvalid) {
		t.Errorf("exclusive job given 2 of 4 GPUs: %v, want ErrInvalid (it takes every GPU)", err)
	}
	all := on(0, 1, 2, 3)
	if err := h.Check(whole, all); err != nil {
		t.Fatalf("exclusive job on the emptied node: %v", err)
	}
	h.Take(all, true)
	if err := h.Check(&Job{}, Allocation{Nodes: []NodeAlloc{{Node: "n1"}}}); !errors.Is(err, ErrConflict) {
		t.Errorf("a job without GPUs beside an exclusive one: %v, want ErrConflict", err)
	}
	h.Release(all, true)
	if err := h.Check(shared, on(0, 1)); err != nil {
		t.Errorf("after the exclusive job left: %v", err)
	}
}
