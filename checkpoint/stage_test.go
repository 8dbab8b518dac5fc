package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// corrupt changes one byte of name, keeping its size.
func corrupt(t *testing.T, name string, at int) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x40
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStageDetectsCorruption(t *testing.T) {
	store := t.TempDir()
	local := commitStep(t, t.TempDir(), 3, map[string]entry{
		"a/first.bin": {bytesOf(2 * chunk), 0o644},
		"b/w.bin":     {bytesOf(chunk + 10), 0o644},
	})
	if _, err := Upload(context.Background(), local, store, 3, 1); err != nil {
		t.Fatal(err)
	}
	stored := filepath.Join(rankDir(store, 3, 1), "b", "w.bin")
	corrupt(t, stored, chunk+5) // in the second chunk, after a.bin is staged

	if ok, why := Complete(store, 3, 2); ok || !strings.HasPrefix(why, "rank 0") {
		t.Fatalf("Complete = %v, %q: the size is right, only rank 0 is missing", ok, why)
	}

	// dst does not exist: Stage creates it, and removes it again.
	dst := filepath.Join(t.TempDir(), "3")
	_, err := Stage(context.Background(), store, 3, 1, dst)
	if err == nil {
		t.Fatal("Stage of a corrupt file succeeded")
	}
	for _, want := range []string{"step 3 rank 1", "file b/w.bin", "SHA-256", "corrupt"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Stage error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stage left %s behind: %v", dst, err)
	}

	// dst exists, empty: it stays, empty.
	dst = t.TempDir()
	if _, err := Stage(context.Background(), store, 3, 1, dst); err == nil {
		t.Fatal("Stage of a corrupt file succeeded")
	}
	if got := readTree(t, dst); len(got) != 0 {
		t.Errorf("Stage left files in %s: %v", dst, got)
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 0 {
		t.Errorf("Stage left %d entries in %s", len(entries), dst)
	}

	// A file that grew is caught too.
	if err := os.WriteFile(stored, []byte(bytesOf(10*chunk)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Stage(context.Background(), store, 3, 1, filepath.Join(t.TempDir(), "x"))
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("Stage of a grown file: %v", err)
	}
}

func TestStageNeedsEmptyDestination(t *testing.T) {
	store := t.TempDir()
	uploadStep(t, store, 1, 1)
	dst := t.TempDir()
	writeTree(t, dst, map[string]entry{"mine": {"keep me", 0o644}})
	if _, err := Stage(context.Background(), store, 1, 0, dst); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Stage into a directory with a file: %v", err)
	}
	if got := readTree(t, dst); got["mine"].data != "keep me" || len(got) != 1 {
		t.Errorf("Stage touched what was there: %v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dst = filepath.Join(t.TempDir(), "x")
	if _, err := Stage(ctx, store, 1, 0, dst); !errors.Is(err, context.Canceled) {
		t.Errorf("Stage with its context ended: %v", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cancelled Stage left %s: %v", dst, err)
	}
}

func TestStageRefusesPathsOutOfTheRank(t *testing.T) {
	store := t.TempDir()
	// A file outside the rank's directory that a manifest points at.
	secret := "not the job's"
	writeTree(t, stepDir(store, 1), map[string]entry{"x": {secret, 0o644}})
	abs := filepath.Join(stepDir(store, 1), "x")
	sum := sha256.Sum256([]byte(secret))

	for _, p := range []string{"../x", abs, "a/../../x", "./../x"} {
		t.Run(p, func(t *testing.T) {
			m := Manifest{Version: ManifestVersion, Step: 1, Rank: 0, Created: time.Now(),
				Files: []File{{Path: p, Size: int64(len(secret)), SHA256: hex.EncodeToString(sum[:]), Mode: 0o644}}}
			dir := rankDir(store, 1, 0)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := writeManifest(dir, m); err != nil {
				t.Fatal(err)
			}
			if ok, _ := Complete(store, 1, 1); ok {
				t.Errorf("a manifest listing %q is complete", p)
			}
			dst := filepath.Join(t.TempDir(), "dst")
			_, err := Stage(context.Background(), store, 1, 0, dst)
			if err == nil || !strings.Contains(err.Error(), "not a clean relative path") {
				t.Errorf("Stage of %q: %v", p, err)
			}
			if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Stage wrote %s: %v", dst, err)
			}
		})
	}
}

// A rank that finds its copy corrupt marks it; from then on the step is
// torn for every rank, and Latest falls back to the step before, until
// the rank uploads the step again.
func TestCorruptStepIsMarkedAndPassedOver(t *testing.T) {
	store := t.TempDir()
	uploadStep(t, store, 4, 2)
	uploadStep(t, store, 5, 2)
	corrupt(t, filepath.Join(rankDir(store, 5, 1), "w.bin"), 3)

	if step, ok, _, err := Latest(store, 2, -1); err != nil || !ok || step != 5 {
		t.Fatalf("Latest before staging = %d, %v, %v; want 5: the sizes are right", step, ok, err)
	}
	_, err := Stage(context.Background(), store, 5, 1, filepath.Join(t.TempDir(), "5"))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Stage of a corrupt copy = %v, want ErrCorrupt", err)
	}
	if _, err := Stage(context.Background(), store, 5, 0, filepath.Join(t.TempDir(), "5")); err != nil {
		t.Fatalf("Stage of the sound rank: %v", err)
	}
	if err := MarkCorrupt(store, 5, 1, "file w.bin: "+err.Error()+"\n"); err != nil {
		t.Fatal(err)
	}
	step, ok, skipped, err := Latest(store, 2, -1)
	if err != nil || !ok || step != 4 {
		t.Fatalf("Latest after the mark = %d, %v, %v; want 4", step, ok, err)
	}
	if len(skipped) != 1 || skipped[0].Step != 5 || !strings.Contains(skipped[0].Why, "rank 1: found corrupt (file w.bin") {
		t.Errorf("skipped = %+v, want step 5, rank 1 found corrupt", skipped)
	}
	if err := MarkCorrupt(store, 9, 0, "no such step"); err == nil {
		t.Error("MarkCorrupt of a step the store does not hold succeeded")
	}

	// The rank uploads step 5 again (a later attempt got there): the mark
	// goes with the old copy.
	local := commitStep(t, t.TempDir(), 5, map[string]entry{"model.bin": {bytesOf(100), 0o644}})
	if _, err := Upload(context.Background(), local, store, 5, 1); err != nil {
		t.Fatal(err)
	}
	if step, _, _, _ := Latest(store, 2, -1); step != 5 {
		t.Errorf("Latest after a new upload of step 5 = %d, want 5", step)
	}
}
