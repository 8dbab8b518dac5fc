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
	s := openTest(t, path)
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
	want := map[string]float64{"ml": 2 * 3600, "alice": 2 * 1800}
	check := func(s *Store, when string) {
		t.Helper()
		got := s.Usage(at(1800), 0)
		got["ml"] = s.Usage(at(7200), 0)["ml"] // ended at 3600: no more after
		if got["ml"] != want["ml"] || got["alice"] != want["alice"] || len(got) != 2 {
			t.Errorf("%s: usage %v; want %v", when, got, want)
		}
	}
	check(s, "running")
	if h := s.Usage(at(3600+int(cluster.DefaultDecayHalfLife/time.Second)), cluster.DefaultDecayHalfLife)["ml"]; h > 3600+1 || h < 3600-10 {
		t.Errorf("ml's usage a half-life after: %.0f; want about half of %d", h, 2*3600)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path)
	check(s, "after a restart")
	if err := s.Expire(7, Retention{HistoryBefore: at(7200)}); err != nil {
		t.Fatal(err)
	}
	if got := s.Usage(at(7200), 0); got["ml"] != 0 {
		t.Errorf("usage of a forgotten job: %v", got)
	}
}
