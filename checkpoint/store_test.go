package checkpoint

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tear damages rank's copy of step in one of the ways a step is torn.
func tear(t *testing.T, store string, step int64, rank int, how string) {
	t.Helper()
	dir := rankDir(store, step, rank)
	var err error
	switch how {
	case "no manifest":
		err = os.Remove(filepath.Join(dir, ManifestFile))
	case "file missing":
		err = os.Remove(filepath.Join(dir, "optim", "state.pt"))
	case "wrong size":
		err = os.WriteFile(filepath.Join(dir, "w.bin"), []byte("short"), 0o644)
	case "rank missing":
		err = os.RemoveAll(dir)
	case "bad manifest":
		err = os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"version": 1, "step": `), 0o644)
	case "other step's manifest":
		var b []byte
		if b, err = os.ReadFile(filepath.Join(rankDir(store, step-1, rank), ManifestFile)); err == nil {
			err = os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644)
		}
	default:
		t.Fatalf("no way to tear a step %q", how)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestCompleteAndLatestSkipTornSteps(t *testing.T) {
	store := t.TempDir()
	torn := []struct {
		step int64
		rank int
		how  string
		why  string
	}{
		{3, 1, "no manifest", "rank 1: no MANIFEST.json"},
		{4, 1, "file missing", "rank 1: file optim/state.pt is missing"},
		{5, 0, "wrong size", "rank 0: file w.bin has 5 bytes, the manifest says"},
		{6, 1, "rank missing", "rank 1: not uploaded"},
		{7, 0, "bad manifest", "rank 0: MANIFEST.json: not a manifest"},
		{9, 1, "other step's manifest", "rank 1: MANIFEST.json is step 8 rank 1's"},
	}
	for step := int64(1); step <= 9; step++ {
		uploadStep(t, store, step, 2)
	}
	for _, tc := range torn {
		tear(t, store, tc.step, tc.rank, tc.how)
	}

	for _, step := range []int64{1, 2, 8} {
		if ok, why := Complete(store, step, 2); !ok {
			t.Errorf("step %d: not complete: %s", step, why)
		}
	}
	for _, tc := range torn {
		ok, why := Complete(store, tc.step, 2)
		if ok || !strings.HasPrefix(why, tc.why) || strings.Contains(why, "\n") {
			t.Errorf("step %d with %s: Complete = %v, %q; want false, %q...", tc.step, tc.how, ok, why, tc.why)
		}
	}
	if ok, why := Complete(store, 1, 3); ok || why != "rank 2: not uploaded" {
		t.Errorf("step 1 for 3 ranks: Complete = %v, %q", ok, why)
	}
	if ok, _ := Complete(store, 1, 0); ok {
		t.Error("a step is complete for 0 ranks")
	}

	step, ok, skipped, err := Latest(store, 2, -1)
	if err != nil || !ok || step != 8 {
		t.Fatalf("Latest = %d, %v, %v; want step 8", step, ok, err)
	}
	if len(skipped) != 1 || skipped[0].Step != 9 || !strings.HasPrefix(skipped[0].Why, torn[5].why) {
		t.Errorf("Latest skipped %+v, want step 9 only", skipped)
	}

	step, ok, skipped, err = Latest(store, 2, 7)
	if err != nil || !ok || step != 2 {
		t.Fatalf("Latest up to 7 = %d, %v, %v; want step 2", step, ok, err)
	}
	var steps []int64
	for i, s := range skipped {
		steps = append(steps, s.Step)
		if want := torn[len(torn)-2-i].why; !strings.HasPrefix(s.Why, want) {
			t.Errorf("skipped step %d: %q, want %q...", s.Step, s.Why, want)
		}
	}
	if want := []int64{7, 6, 5, 4, 3}; !slices.Equal(steps, want) {
		t.Errorf("Latest up to 7 skipped steps %v, want %v, newest first", steps, want)
	}

	if step, ok, _, _ := Latest(store, 2, 1); !ok || step != 1 {
		t.Errorf("Latest up to 1 = %d, %v; want 1", step, ok)
	}
	if _, ok, skipped, err := Latest(store, 2, 0); ok || len(skipped) != 0 || err != nil {
		t.Errorf("Latest up to 0 = %v, %v, %v; want none", ok, skipped, err)
	}
	if step, ok, _, _ := Latest(store, 3, -1); ok {
		t.Errorf("Latest for 3 ranks = step %d; only 2 were uploaded", step)
	}
	if _, _, _, err := Latest(store, 0, -1); err == nil {
		t.Error("Latest for 0 ranks: no error")
	}
}

func TestSteps(t *testing.T) {
	store := t.TempDir()
	uploadStep(t, store, 12, 1)
	uploadStep(t, store, 2, 1)
	for _, name := range []string{"step-007", "step-x", "step--1", "other", "rank-1"} {
		if err := os.Mkdir(filepath.Join(store, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, store, map[string]entry{"step-5": {"a file", 0o644}})

	got, err := Steps(store)
	if err != nil || !slices.Equal(got, []int64{2, 12}) {
		t.Errorf("Steps = %v, %v; want [2 12]", got, err)
	}

	if _, err := Steps(filepath.Join(store, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Steps of a store that does not exist: %v", err)
	}
	if _, ok, _, err := Latest(t.TempDir(), 1, -1); ok || err != nil {
		t.Errorf("Latest of an empty store = %v, %v", ok, err)
	}
}

func TestPrune(t *testing.T) {
	complete := []int64{1, 3, 4, 6}
	torn := []int64{2, 5, 7, 8}
	store := t.TempDir()
	for _, s := range complete {
		uploadStep(t, store, s, 2)
	}
	for _, s := range torn {
		uploadStep(t, store, s, 2)
		tear(t, store, s, 1, "no manifest")
	}
	if err := os.Mkdir(filepath.Join(store, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}

	removed, err := Prune(store, 2, 2)
	if err != nil || !slices.Equal(removed, []int64{1, 2, 3}) {
		t.Errorf("Prune keep 2 removed %v, %v; want [1 2 3]", removed, err)
	}
	if got, _ := Steps(store); !slices.Equal(got, []int64{4, 5, 6, 7, 8}) {
		t.Errorf("after Prune keep 2: steps %v, want [4 5 6 7 8]", got)
	}

	removed, err = Prune(store, 2, 0) // as 1
	if err != nil || !slices.Equal(removed, []int64{4, 5}) {
		t.Errorf("Prune keep 0 removed %v, %v; want [4 5]", removed, err)
	}
	if got, _ := Steps(store); !slices.Equal(got, []int64{6, 7, 8}) {
		t.Errorf("after Prune keep 0: steps %v, want [6 7 8]", got)
	}
	if _, err := os.Stat(filepath.Join(store, "notes")); err != nil {
		t.Errorf("Prune removed what is not a step: %v", err)
	}

	// Counted for 3 ranks, no step is complete: nothing goes.
	if removed, err := Prune(store, 3, 1); err != nil || len(removed) != 0 {
		t.Errorf("Prune with no complete step removed %v, %v", removed, err)
	}
	if _, err := Prune(store, 0, 1); err == nil {
		t.Error("Prune for 0 ranks: no error")
	}
}

// A step whose ranks were written by different attempts is torn: a later
// attempt has rewritten some of its ranks and not yet the others. Uploaded
// tells a rank's copy of this attempt from one of another.
func TestStepOfMixedAttemptsIsTorn(t *testing.T) {
	store := t.TempDir()
	upload := func(step int64, rank, attempt int) {
		t.Helper()
		local := commitStep(t, t.TempDir(), step, map[string]entry{"w.bin": {"attempt " + strconv.Itoa(attempt), 0o644}})
		if _, err := Upload(context.Background(), local, store, step, rank, WithAttempt(attempt)); err != nil {
			t.Fatal(err)
		}
	}
	upload(6, 0, 0)
	upload(6, 1, 0)
	upload(7, 0, 0)
	upload(7, 1, 0)
	upload(7, 0, 1) // attempt 1 reached step 7 again; rank 1 has not copied it yet
	ok, why := Complete(store, 7, 2)
	if ok || !strings.Contains(why, "rank 1 was written by attempt 0, rank 0 by attempt 1") {
		t.Fatalf("Complete of a step of two attempts = %v, %q", ok, why)
	}
	if step, _, _, _ := Latest(store, 2, -1); step != 6 {
		t.Errorf("Latest = %d, want 6", step)
	}
	if !Uploaded(store, 7, 0, 1) || Uploaded(store, 7, 1, 1) || !Uploaded(store, 7, 1, 0) || Uploaded(store, 8, 0, 1) {
		t.Error("Uploaded does not tell the attempts' copies apart")
	}
	upload(7, 1, 1)
	if ok, why := Complete(store, 7, 2); !ok {
		t.Errorf("Complete once every rank is of attempt 1 = false, %q", why)
	}
}
