package store

import (
	"slices"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// historyStore holds jobs 1..n; job i ended (cancelled) at second i when
// ended(i), else it is pending.
func historyStore(t *testing.T, n int, ended func(int) bool) *Store {
	t.Helper()
	s := openTest(t, "")
	idx := uint64(1)
	for i := 1; i <= n; i++ {
		mustSubmit(t, s, idx, cluster.JobID(i))
		idx++
		if ended(i) {
			if _, err := s.CancelJobs(idx, []cluster.JobID{cluster.JobID(i)}, at(i), "Cancelled", nil); err != nil {
				t.Fatal(err)
			}
			idx++
		}
	}
	return s
}

func jobIDs(jobs []*cluster.Job) []cluster.JobID {
	out := make([]cluster.JobID, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func TestJobsByID(t *testing.T) {
	s := historyStore(t, 20, func(i int) bool { return i%2 == 1 })
	for _, tc := range []struct {
		name string
		q    JobQuery
		want []cluster.JobID
	}{
		{"finished and active, each once, in order", JobQuery{IDs: []cluster.JobID{15, 3, 3, 99, 8}, Finished: true}, []cluster.JobID{3, 8, 15}},
		{"after", JobQuery{IDs: []cluster.JobID{15, 3, 8}, Finished: true, After: 5}, []cluster.JobID{8, 15}},
		{"ended after", JobQuery{IDs: []cluster.JobID{15, 3, 8}, Finished: true, EndedAfter: at(11)}, []cluster.JobID{8, 15}},
		{"active only", JobQuery{IDs: []cluster.JobID{15, 3, 8}}, []cluster.JobID{8}},
		{"a page at a time", JobQuery{IDs: []cluster.JobID{15, 3, 8}, Finished: true, Limit: 1}, []cluster.JobID{3, 8, 15}},
		{"none", JobQuery{IDs: []cluster.JobID{}, Finished: true}, []cluster.JobID{}},
	} {
		if got := jobIDs(collect(t, s, tc.q)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
	}
}

// TestJobsTake bounds pages with Take (as the controller bounds them by
// size): a page ends before the job Take refuses, and the next page
// starts with it.
func TestJobsTake(t *testing.T) {
	s := historyStore(t, 30, func(i int) bool { return i%3 != 0 })
	q := JobQuery{Finished: true, Limit: 10}
	var got []cluster.JobID
	for pages := 1; ; pages++ {
		taken := 0
		q.Take = func(j *cluster.Job) bool {
			if taken == 4 {
				return false
			}
			taken++
			return true
		}
		page, next, err := s.Jobs(q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != taken || len(page) > 4 {
			t.Fatalf("page %d: %d jobs, %d taken; want at most 4, all taken", pages, len(page), taken)
		}
		got = append(got, jobIDs(page)...)
		if next == 0 {
			if pages != 8 {
				t.Errorf("%d pages; want 8 of at most 4 jobs", pages)
			}
			break
		}
		if next != page[len(page)-1].ID {
			t.Fatalf("page %d: next %d; want the last job taken, %d", pages, next, page[len(page)-1].ID)
		}
		q.After = next
	}
	if len(got) != 30 || got[0] != 1 || got[29] != 30 {
		t.Errorf("jobs %v; want 1..30", got)
	}
}

// TestJobsEndedAfter compares EndedAfter listings with a plain filter,
// for cuts that keep most finished jobs (the history is scanned, and the
// older ones skipped) and few (they are looked up).
func TestJobsEndedAfter(t *testing.T) {
	const n = 200
	s := historyStore(t, n, func(i int) bool { return i%10 != 0 })
	for _, cut := range []int{0, 1, 50, 150, 190, 199, 250} {
		for _, limit := range []int{0, 7} {
			q := JobQuery{Finished: true, Limit: limit}
			if cut > 0 {
				q.EndedAfter = at(cut)
			}
			var want []cluster.JobID
			for i := 1; i <= n; i++ {
				if i%10 == 0 || cut == 0 || i >= cut {
					want = append(want, cluster.JobID(i))
				}
			}
			if got := jobIDs(collect(t, s, q)); !slices.Equal(got, want) {
				t.Errorf("ended after second %d, pages of %d: %v\nwant %v", cut, limit, got, want)
			}
		}
	}
}
