package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bytesOf returns n bytes that are not all alike.
func bytesOf(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return string(b)
}

func TestUploadStageRoundTrip(t *testing.T) {
	// Modes are kept whatever the umask: files are made with it, then set.
	defer syscall.Umask(syscall.Umask(0o077))
	files := map[string]entry{
		"shared/notes.txt":   {"rw for all", 0o666},
		"shared/tool":        {"rwx for all", 0o777},
		"model/layer0/w.bin": {bytesOf(3*chunk + 17), 0o600},
		"model/layer1/w.bin": {bytesOf(1000), 0o640},
		"opt.pt":             {"optimizer", 0o644},
		"run.sh":             {"#!/bin/sh\n", 0o755},
		"empty":              {"", 0o400},
		"a-b":                {"sorts before a/b", 0o644},
		"a/b":                {"sorts after a-b", 0o644},
	}
	local := commitStep(t, t.TempDir(), 7, files)
	// Phalanx's own names are left out, at any depth.
	writeTree(t, filepath.Join(local, "7"), map[string]entry{
		".phx-scratch":     {"x", 0o644},
		".phx-cache/x.bin": {"x", 0o644},
		"model/.phx-tmp":   {"x", 0o644},
	})
	store := t.TempDir()

	m, err := Upload(context.Background(), local, store, 7, 3)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != ManifestVersion || m.Step != 7 || m.Rank != 3 || len(m.Files) != len(files) {
		t.Fatalf("manifest %+v: want version %d, step 7, rank 3, %d files", m, ManifestVersion, len(files))
	}
	if !slices.IsSortedFunc(m.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) }) {
		t.Errorf("manifest files not sorted by path: %v", m.Files)
	}
	for _, f := range m.Files {
		sum := sha256.Sum256([]byte(files[f.Path].data))
		if f.SHA256 != hex.EncodeToString(sum[:]) || f.Size != int64(len(files[f.Path].data)) || f.Mode != files[f.Path].mode {
			t.Errorf("manifest entry %+v does not describe %s", f, f.Path)
		}
	}

	dir := filepath.Join(store, "step-7", "rank-3")
	stored := readTree(t, dir)
	delete(stored, ManifestFile)
	sameTree(t, stored, files)
	if ok, why := Complete(store, 7, 4); ok || !strings.Contains(why, "rank 0") {
		t.Errorf("Complete with ranks 0-2 missing = %v, %q", ok, why)
	}

	dst := filepath.Join(t.TempDir(), "restart", "7")
	staged, err := Stage(context.Background(), store, 7, 3, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(staged.Files) != len(m.Files) || !staged.Created.Equal(m.Created) {
		t.Errorf("Stage's manifest %+v, Upload's %+v", staged, m)
	}
	sameTree(t, readTree(t, dst), files)
}

func TestUploadWritesManifestLast(t *testing.T) {
	local := commitStep(t, t.TempDir(), 1, map[string]entry{"w.bin": {"w", 0o644}})
	store := t.TempDir()
	if _, err := Upload(context.Background(), local, store, 1, 0); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(store, "step-1", "rank-0")
	if got := names(t, dir); !slices.Equal(got, []string{ManifestFile, "w.bin"}) {
		t.Errorf("rank directory holds %v: want the file and the manifest, no temporary", got)
	}
	m, err := readManifest(dir, 1, 0)
	if err != nil || len(m.Files) != 1 || m.Created.IsZero() {
		t.Errorf("manifest on disk: %+v, %v", m, err)
	}
}

func TestUploadReplacesEarlierUpload(t *testing.T) {
	store := t.TempDir()
	dir := filepath.Join(store, "step-4", "rank-1")
	// A torn upload: files, no manifest.
	writeTree(t, dir, map[string]entry{"stale.bin": {"half", 0o644}, "w.bin": {"old", 0o644}})

	local := commitStep(t, t.TempDir(), 4, map[string]entry{"w.bin": {"new weights", 0o644}})
	if _, err := Upload(context.Background(), local, store, 4, 1); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dir)
	delete(got, ManifestFile)
	sameTree(t, got, map[string]entry{"w.bin": {"new weights", 0o644}})

	// And a complete one, uploaded again with other files.
	writeTree(t, filepath.Join(local, "4"), map[string]entry{"w.bin": {"newer", 0o644}, "extra": {"x", 0o644}})
	m, err := Upload(context.Background(), local, store, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 2 || m.Files[1].Size != int64(len("newer")) {
		t.Errorf("second upload's manifest: %+v", m.Files)
	}
	if ok, why := Complete(store, 4, 2); ok || !strings.HasPrefix(why, "rank 0: not uploaded") {
		t.Errorf("Complete = %v, %q; want rank 0 not uploaded", ok, why)
	}
}

func TestUploadRefusesSymlink(t *testing.T) {
	local := commitStep(t, t.TempDir(), 2, map[string]entry{"w.bin": {"w", 0o644}})
	store := t.TempDir()
	if _, err := Upload(context.Background(), local, store, 2, 0); err != nil {
		t.Fatal(err)
	}
	writeTree(t, filepath.Join(local, "2", "sub"), map[string]entry{"x": {"x", 0o644}})
	if err := os.Symlink("../w.bin", filepath.Join(local, "2", "sub", "latest")); err != nil {
		t.Fatal(err)
	}

	_, err := Upload(context.Background(), local, store, 2, 0)
	if err == nil || !strings.Contains(err.Error(), "sub/latest is a symbolic link") ||
		!strings.Contains(err.Error(), "step 2 rank 0") {
		t.Fatalf("Upload with a symbolic link: %v", err)
	}
	// The earlier, complete upload is untouched.
	if ok, why := Complete(store, 2, 1); !ok {
		t.Errorf("the refused upload damaged the earlier one: %s", why)
	}
}

func TestUploadRefusesFilesItCannotKeep(t *testing.T) {
	store := t.TempDir()
	local := commitStep(t, t.TempDir(), 1, map[string]entry{ManifestFile: {"{}", 0o644}})
	_, err := Upload(context.Background(), local, store, 1, 0)
	if err == nil || !strings.Contains(err.Error(), "give the file another name") {
		t.Errorf("Upload of a file named %s: %v", ManifestFile, err)
	}

	local = commitStep(t, t.TempDir(), 1, map[string]entry{"w.bin": {"w", 0o644}})
	_, err = Upload(context.Background(), local, filepath.Join(store, "unmounted"), 1, 0)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Upload into a store that does not exist: %v", err)
	}
	if _, err := os.Stat(filepath.Join(store, "unmounted")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Upload created the store: %v", err)
	}

	_, err = Upload(context.Background(), local, store, 9, 0)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Upload of a step that is not there: %v", err)
	}
}

func TestUploadCancelled(t *testing.T) {
	local := commitStep(t, t.TempDir(), 5, map[string]entry{
		"a.bin": {bytesOf(4 * chunk), 0o644},
		"b.bin": {bytesOf(4 * chunk), 0o644},
	})
	store := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sleeps int
	clock := withClock(time.Now, func(context.Context, time.Duration) error {
		sleeps++
		cancel() // the agent is told to stop while the upload waits
		return nil
	})

	_, err := Upload(ctx, local, store, 5, 0, WithRate(chunk), clock)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Upload cancelled: %v", err)
	}
	if sleeps != 1 {
		t.Errorf("copied on after the cancel: %d waits, want 1", sleeps)
	}
	if _, err := os.Stat(filepath.Join(store, "step-5", "rank-0")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cancelled upload left its rank directory: %v", err)
	}

	if _, err := Upload(ctx, local, store, 5, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Upload with a context already ended: %v", err)
	}
}
