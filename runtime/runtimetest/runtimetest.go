// Package runtimetest helps tests run tasks as users other than the
// agent's.
package runtimetest

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedDir returns a temporary directory that every user may create files
// in (mode 1777, like /tmp, with its parents searchable): tasks run as
// another user open their output there as that user.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		mode := os.FileMode(0o755)
		if d == dir {
			mode = 0o777 | os.ModeSticky
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
