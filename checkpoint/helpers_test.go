package checkpoint

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// entry is one file of a tree: its contents and permission bits.
type entry struct {
	data string
	mode fs.FileMode
}

// writeTree writes files (slash-separated paths) under dir.
func writeTree(t *testing.T, dir string, files map[string]entry) {
	t.Helper()
	for p, e := range files {
		name := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(e.data), e.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, e.mode); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree reads back every regular file under dir; anything else fails
// the test.
func readTree(t *testing.T, dir string) map[string]entry {
	t.Helper()
	files := map[string]entry{}
	err := filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			t.Fatalf("%s is not a regular file: %v", name, d.Type())
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, name)
		files[filepath.ToSlash(rel)] = entry{string(b), fi.Mode().Perm()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// commitStep writes files as step of a task's local directory, with the
// Marker, and returns the local directory.
func commitStep(t *testing.T, local string, step int64, files map[string]entry) string {
	t.Helper()
	dir := filepath.Join(local, strconv.FormatInt(step, 10))
	writeTree(t, dir, files)
	writeTree(t, dir, map[string]entry{Marker: {"", 0o644}})
	return local
}

// uploadStep uploads step for ranks 0..ranks-1, each with a file w.bin
// and a file in a subdirectory, and returns the files rank 0 uploaded.
func uploadStep(t *testing.T, store string, step int64, ranks int) map[string]entry {
	t.Helper()
	var rank0 map[string]entry
	for r := range ranks {
		files := map[string]entry{
			"w.bin":          {"weights of step " + strconv.FormatInt(step, 10) + " rank " + strconv.Itoa(r), 0o644},
			"optim/state.pt": {"optimizer state", 0o600},
		}
		local := commitStep(t, t.TempDir(), step, files)
		if _, err := Upload(context.Background(), local, store, step, r); err != nil {
			t.Fatal(err)
		}
		if r == 0 {
			rank0 = files
		}
	}
	return rank0
}

// names returns the sorted names in dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// sameTree fails the test unless got and want hold the same files.
func sameTree(t *testing.T, got, want map[string]entry) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("files %v\nwant %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		for p, w := range want {
			if g := got[p]; g != w {
				t.Errorf("%s: %d bytes mode %v, want %d bytes mode %v", p, len(g.data), g.mode, len(w.data), w.mode)
			}
		}
	}
}
