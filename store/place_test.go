package store

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

func TestPlaceJobs(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1", "n2")
	if err := submitErr(s, 3, pendingJob(1, 2, 2)); err != nil {
		t.Fatal(err)
	}
	p := Placement{Job: 1, Alloc: alloc([]int{0, 1}, "n1", "n2"), MasterPort: 29501, Time: at(2)}
	ids, err := s.PlaceJobs(4, []Placement{p})
	if err != nil || !reflect.DeepEqual(ids, []cluster.JobID{1}) {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	j := mustJob(t, s, 1)
	if j.State != cluster.JobConfiguring || j.MasterPort != 29501 || !reflect.DeepEqual(*j.Alloc, p.Alloc) || len(j.Tasks) != 2 {
		t.Errorf("placed job = %+v", j)
	}
	// Placing it again (a stale plan) is skipped: it is no longer pending.
	if ids, err := s.PlaceJobs(5, []Placement{p}); err != nil || len(ids) != 0 {
		t.Errorf("re-placing = %v, %v; want nothing", ids, err)
	}
}

// The attempt a placement starts keeps how it was placed, through a
// restart (the record on disk) and a snapshot.
func TestPlaceJobsRecordsHowEachWasPlaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTest(t, path)
	mustRegister(t, s, 1, "n1")
	for id := cluster.JobID(1); id <= 3; id++ {
		if err := submitErr(s, uint64(1+id), pendingJob(id, 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[cluster.JobID]cluster.PlacedBy{1: cluster.PlacedMain, 2: cluster.PlacedBackfill, 3: cluster.PlacedUnknown}
	var ps []Placement
	for id := cluster.JobID(1); id <= 3; id++ {
		ps = append(ps, Placement{Job: id, Alloc: alloc([]int{int(id)}, "n1"), MasterPort: 29500 + int(id), Time: at(5), By: want[id]})
	}
	if ids, err := s.PlaceJobs(5, ps); err != nil || len(ids) != 3 {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	var snap bytes.Buffer
	if err := s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	restored := openTest(t, "")
	if err := restored.Restore(&snap, 0); err != nil {
		t.Fatal(err)
	}
	for what, st := range map[string]*Store{"reopened": openTest(t, path), "restored": restored} {
		for id, by := range want {
			if a := mustJob(t, st, id).Attempts; len(a) != 1 || a[0].PlacedBy != by {
				t.Errorf("%s: job %d attempts %+v; want one placed by %q", what, id, a, by)
			}
		}
	}
}

func TestPlaceJobsRecheck(t *testing.T) {
	type job struct {
		id         cluster.JobID
		nodes, gpu int
	}
	for _, tc := range []struct {
		name   string
		before []Placement // committed first
		place  []Placement
		want   []cluster.JobID
	}{{
		name:   "double-booked GPU on a committed job",
		before: []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1")}},
		place:  []Placement{{Job: 2, Alloc: alloc([]int{1, 2}, "n1")}},
	}, {
		name:  "double-booked GPU within one plan: the first wins",
		place: []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1")}, {Job: 2, Alloc: alloc([]int{1, 2}, "n1")}},
		want:  []cluster.JobID{1},
	}, {
		name:   "gang with one bad node is skipped whole, others apply",
		before: []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n2")}},
		place: []Placement{
			{Job: 3, Alloc: alloc([]int{0, 1}, "n1", "n2")},
			{Job: 2, Alloc: alloc([]int{2, 3}, "n1")},
		},
		want: []cluster.JobID{2},
	}, {
		name:  "GPU index beyond the node",
		place: []Placement{{Job: 1, Alloc: alloc([]int{7, 8}, "n1")}},
	}, {
		name:  "GPU listed twice",
		place: []Placement{{Job: 1, Alloc: alloc([]int{3, 3}, "n1")}},
	}, {
		name:  "unknown node",
		place: []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "nX")}},
	}, {
		name:  "down node",
		place: []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "down1")}},
	}, {
		name:  "drained node",
		place: []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "drain1")}},
	}, {
		name:  "same node twice in a gang",
		place: []Placement{{Job: 3, Alloc: alloc([]int{0, 1}, "n1", "n1")}},
	}, {
		name:  "allocation size differs from the job",
		place: []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1", "n2")}},
	}, {
		name:  "unknown job",
		place: []Placement{{Job: 77, Alloc: alloc([]int{0, 1}, "n1")}},
	}, {
		name: "CPUs do not fit",
		place: []Placement{{Job: 1, Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{
			{Node: "n1", GPUs: []int{0, 1}, CPUs: 65},
		}}}},
	}, {
		name:  "fewer GPUs than the job asks per node",
		place: []Placement{{Job: 1, Alloc: alloc([]int{0}, "n1")}},
	}, {
		name:  "more GPUs than the job asks per node",
		place: []Placement{{Job: 1, Alloc: alloc([]int{0, 1, 2}, "n1")}},
	}, {
		name: "memory does not fit next to a live job",
		before: []Placement{{Job: 1, Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{
			{Node: "n1", GPUs: []int{0, 1}, MemoryMB: 500000},
		}}}},
		place: []Placement{{Job: 2, Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{
			{Node: "n1", GPUs: []int{2, 3}, MemoryMB: 12001},
		}}}},
	}, {
		name:   "free GPUs on a shared node fit",
		before: []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1")}},
		place:  []Placement{{Job: 2, Alloc: alloc([]int{2, 3}, "n1")}},
		want:   []cluster.JobID{2},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, "")
			mustRegister(t, s, 1, "n1", "n2", "down1", "drain1")
			if err := s.SetNodeState(10, "down1", cluster.NodeDown, "bad", "root", at(0)); err != nil {
				t.Fatal(err)
			}
			if err := s.SetNodeState(11, "drain1", cluster.NodeDrain, "repair", "root", at(0)); err != nil {
				t.Fatal(err)
			}
			for i, j := range []job{{1, 1, 2}, {2, 1, 2}, {3, 2, 2}} {
				if err := submitErr(s, uint64(20+i), pendingJob(j.id, j.nodes, j.gpu)); err != nil {
					t.Fatal(err)
				}
			}
			if ids, err := s.PlaceJobs(30, tc.before); err != nil || len(ids) != len(tc.before) {
				t.Fatalf("setup PlaceJobs = %v, %v", ids, err)
			}
			ids, err := s.PlaceJobs(31, tc.place)
			if err != nil || !reflect.DeepEqual(ids, tc.want) {
				t.Errorf("PlaceJobs = %v, %v; want %v", ids, err, tc.want)
			}
			for _, p := range tc.place {
				j, err := s.Job(p.Job)
				if err != nil {
					continue
				}
				placed := contains(ids, p.Job) || contains(idsOf(tc.before), p.Job)
				if placed != (j.State == cluster.JobConfiguring) || placed != (j.Alloc != nil) {
					t.Errorf("job %d: placed %v but state %s alloc %v", p.Job, placed, j.State, j.Alloc)
				}
			}
		})
	}
}

func TestPlaceJobsAfterResourcesFreed(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1")
	mustSubmit(t, s, 2, 1)
	mustSubmit(t, s, 3, 2)
	if ids, _ := s.PlaceJobs(4, []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1")}}); len(ids) != 1 {
		t.Fatal("setup placement failed")
	}
	// Cancelled but its task still runs: the GPUs stay held.
	if _, err := s.CancelJobs(5, []cluster.JobID{1}, at(1), "c", nil); err != nil {
		t.Fatal(err)
	}
	p := Placement{Job: 2, Alloc: alloc([]int{0, 1}, "n1")}
	if ids, _ := s.PlaceJobs(6, []Placement{p}); len(ids) != 0 {
		t.Fatalf("placed on GPUs a cancelled, still running job holds")
	}
	r := cluster.TaskReport{JobID: 1, Rank: 0, Node: "n1", State: cluster.TaskKilled, ExitSignal: 15, Time: at(2)}
	if err := s.ReportTask(7, r); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.PlaceJobs(8, []Placement{p}); len(ids) != 1 {
		t.Errorf("GPUs freed by the kill report were not reusable")
	}
}

func contains(ids []cluster.JobID, id cluster.JobID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func idsOf(ps []Placement) []cluster.JobID {
	var out []cluster.JobID
	for _, p := range ps {
		out = append(out, p.Job)
	}
	return out
}
