package store

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Fair share's usage: a released attempt counts what it held from its
// placement to its end, a running one up to now, by account (else user);
// a restart finds the same from disk; a forgotten job no longer counts.
func TestUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openNoDecay(t, path)
	mustRegister(t, s, 1, "n1", "n2")
	ml := pendingJob(1, 1, 2)
	ml.Account = "ml"
	if _, err := s.SubmitJob(3, ml, nil, nil); err != nil {
		t.Fatal(err)
	}
	mustSubmit(t, s, 4, 2) // alice's, no account
	if _, err := s.PlaceJobs(5, []Placement{
		{Job: 1, Alloc: alloc([]int{0, 1}, "n1"), Time: at(0)},
		{Job: 2, Alloc: alloc([]int{0, 1}, "n2"), Time: at(0)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.ReportTask(6, cluster.TaskReport{JobID: 1, Node: "n1", State: cluster.TaskExited, Time: at(3600)}); err != nil {
		t.Fatal(err)
	}
	mlG, aliceG := cluster.ShareGroup{Account: "ml"}, cluster.ShareGroup{User: "alice"}
	want := map[cluster.ShareGroup]float64{mlG: 2 * 3600, aliceG: 2 * 1800}
	check := func(s *Store, when string) {
		t.Helper()
		got := s.Usage(at(1800))
		got[mlG] = s.Usage(at(7200))[mlG] // ended at 3600: no more after
		if got[mlG] != want[mlG] || got[aliceG] != want[aliceG] || len(got) != 2 {
			t.Errorf("%s: usage %v; want %v", when, got, want)
		}
	}
	check(s, "running")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	decaying := openTest(t, path) // the default half-life, 7 days
	if h := decaying.Usage(at(3600 + int(cluster.DefaultDecayHalfLife/time.Second)))[mlG]; h > 3600+1 || h < 3600-10 {
		t.Errorf("ml's usage a half-life after: %.0f; want about half of %d", h, 2*3600)
	}
	if err := decaying.Close(); err != nil {
		t.Fatal(err)
	}
	s = openNoDecay(t, path)
	check(s, "after a restart")
	if err := s.Expire(7, Retention{HistoryBefore: at(7200)}); err != nil {
		t.Fatal(err)
	}
	if got := s.Usage(at(7200)); got[mlG] != 0 {
		t.Errorf("usage of a forgotten job: %v", got)
	}
}

// openNoDecay is openTest with usage that never fades.
func openNoDecay(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path, NoSync(), DecayHalfLife(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := checkConsistency(s); err != nil {
			t.Errorf("consistency check: %v", err)
		}
		s.Close()
	})
	return s
}

// What a full scheduling pass pays for fair share with 100,000 finished
// jobs' attempts held (go test -bench Usage ./store): one step per group.
func BenchmarkUsage100k(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "state.db"), NoSync())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 100000; i++ {
		j := &cluster.Job{ID: cluster.JobID(i + 1), User: []string{"ml", "vision", "nlp", "alice"}[i%4]}
		s.st.recordHeld(j, &cluster.Attempt{Alloc: alloc([]int{0, 1, 2, 3, 4, 5, 6, 7}, "n1"), StartTime: at(i), EndTime: at(i + 3600)})
	}
	now := at(200000)
	b.ResetTimer()
	for b.Loop() {
		if u := s.Usage(now); len(u) != 4 {
			b.Fatal(u)
		}
	}
}
