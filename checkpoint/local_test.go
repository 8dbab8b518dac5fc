package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCommitted(t *testing.T) {
	local := t.TempDir()
	for _, step := range []int64{1, 10, 3} {
		commitStep(t, local, step, map[string]entry{"w.bin": {"w", 0o644}})
	}
	// Written but not committed.
	writeTree(t, filepath.Join(local, "2"), map[string]entry{"w.bin": {"w", 0o644}})
	// Committed, but not named as a step is.
	for _, name := range []string{"007", "x", "-4", "+5", "99999999999999999999"} {
		writeTree(t, filepath.Join(local, name), map[string]entry{Marker: {"", 0o644}})
	}
	// A file named as a step.
	writeTree(t, local, map[string]entry{"6": {"", 0o644}})

	got, err := Committed(local)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{1, 3, 10}; !slices.Equal(got, want) {
		t.Errorf("Committed = %v, want %v", got, want)
	}

	if err := os.Remove(filepath.Join(local, "3", Marker)); err != nil {
		t.Fatal(err)
	}
	if got, _ := Committed(local); !slices.Equal(got, []int64{1, 10}) {
		t.Errorf("with step 3's marker removed: Committed = %v, want [1 10]", got)
	}
}

func TestCommittedNoDirectory(t *testing.T) {
	got, err := Committed(filepath.Join(t.TempDir(), "absent"))
	if err != nil || len(got) != 0 {
		t.Errorf("Committed(absent) = %v, %v; want nothing and no error", got, err)
	}
}
