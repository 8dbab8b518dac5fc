// Package runtimetest helps tests run tasks as users other than the
// agent's, and find the processes that supervise them.
package runtimetest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
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

// ProcessExe is the PID and executable of a process whose command line
// (its arguments joined by NUL, each ended by one) begins with prefix, as
// "phalanx-shim\x00phx-7-" finds the supervisor of job 7's tasks; 0 and
// "" when there is none.
func ProcessExe(prefix string) (pid int, exe string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.HasPrefix(b, []byte(prefix)) {
			pid, _ = strconv.Atoi(filepath.Base(filepath.Dir(p)))
			exe, _ = os.Readlink(filepath.Join(filepath.Dir(p), "exe"))
			return pid, exe
		}
	}
	return 0, ""
}
