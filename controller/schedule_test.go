package controller

import (
	"slices"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// A full pass leaves the quick passes the head of its queue without the
// jobs it placed itself, and the ID below which every job was committed
// when it read the state: a job still being committed then is new to them.
func TestQueueHeadAfterAFullPass(t *testing.T) {
	var h queueHead
	plan := &scheduler.Plan{Queue: []cluster.JobID{5, 2, 9, 7, 3}, Placements: []scheduler.Placement{{Job: 5}, {Job: 9}}}
	h.record(plan, 11, 2)
	if want := []cluster.JobID{2, 7}; !slices.Equal(h.ids, want) || h.last != 11 {
		t.Errorf("head %v, last %d; want %v, 11", h.ids, h.last, want)
	}

	s := &Server{nextID: 20, inflight: map[cluster.JobID]struct{}{}}
	if got := s.committedBelow(); got != 20 {
		t.Errorf("nothing in flight: committed below %d; want 20, the next ID", got)
	}
	s.inflight[17], s.inflight[14] = struct{}{}, struct{}{}
	if got := s.committedBelow(); got != 14 {
		t.Errorf("14 and 17 in flight: committed below %d; want 14", got)
	}
}
