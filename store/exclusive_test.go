package store

import (
	"reflect"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// An exclusive job shares its nodes with nobody: the re-check refuses a
// placement on a node an exclusive job holds, and an exclusive placement on
// a node another job uses, even when the GPUs it takes are free (the job
// there holds none). An exclusive job takes every GPU of its nodes.
func TestPlaceJobsKeepsExclusiveNodesWhole(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, tc := range []struct {
		name            string
		firstExclusive  bool
		secondExclusive bool
		want            []cluster.JobID
	}{
		{"shared after shared", false, false, []cluster.JobID{1, 2}},
		{"shared on an exclusive node", true, false, []cluster.JobID{1}},
		{"exclusive on a used node", false, true, []cluster.JobID{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, "")
			mustRegister(t, s, 1, "n1")
			var allocs []cluster.Allocation
			for i, excl := range []bool{tc.firstExclusive, tc.secondExclusive} {
				gpus := []int{2 * i, 2*i + 1}
				switch {
				case excl:
					gpus = all
				case tc.secondExclusive:
					gpus = nil // a job without GPUs: the exclusive one's are free
				}
				j := pendingJob(cluster.JobID(i+1), 1, len(gpus))
				j.Exclusive = excl
				if err := submitErr(s, uint64(2+i), j); err != nil {
					t.Fatal(err)
				}
				allocs = append(allocs, alloc(gpus, "n1"))
			}
			var placed []cluster.JobID
			for i, p := range []Placement{
				{Job: 1, Alloc: allocs[0]},
				{Job: 2, Alloc: allocs[1]},
			} {
				ids, err := s.PlaceJobs(uint64(10+i), []Placement{p})
				if err != nil {
					t.Fatal(err)
				}
				placed = append(placed, ids...)
			}
			if !reflect.DeepEqual(placed, tc.want) {
				t.Errorf("placed %v; want %v", placed, tc.want)
			}
		})
	}
}
