package durable

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ca.key")
	for _, content := range []string{"first", "second"} {
		if err := WriteFile(path, []byte(content), 0o400); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("after writing %q: %q, %v", content, got, err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o400 {
		t.Fatalf("mode %v, %v; want 0400", fi.Mode(), err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir"), []byte("x"), 0o644); err == nil {
		t.Error("wrote into a directory that does not exist")
	}
}
