package store

import (
	"reflect"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// An exclusive job shares its nodes with nobody: the re-check refuses a
// placement on a node an exclusive job holds, and an exclusive placement on
// a node another job uses, even when GPUs are free.
func TestPlaceJobsKeepsExclusiveNodesWhole(t *testing.T) {
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
			for i, excl := range []bool{tc.firstExclusive, tc.secondExclusive} {
				j := pendingJob(cluster.JobID(i+1), 1, 2)
				j.Exclusive = excl
				if err := submitErr(s, uint64(2+i), j); err != nil {
					t.Fatal(err)
				}
			}
			var placed []cluster.JobID
			for i, p := range []Placement{
				{Job: 1, Alloc: alloc([]int{0, 1}, "n1")},
				{Job: 2, Alloc: alloc([]int{2, 3}, "n1")},
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
