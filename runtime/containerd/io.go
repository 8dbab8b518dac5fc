package containerd

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// checkOutputs opens the Spec's output files as the task's user
// (runtime.OpenOutput), creating them as the user's, and closes them: a
// file the user may not write fails the start here, with a clear error,
// before the task's I/O keeper opens them again, as the user too. The
// shim is never given a path: it would open it as root, after the user had
// a chance to swap it for a link to a file of root's.
func checkOutputs(spec runtime.Spec) error {
	for _, s := range []struct{ name, path string }{{"stdout", spec.Stdout}, {"stderr", spec.Stderr}} {
		if s.path == "" || (s.name == "stderr" && filepath.Clean(spec.Stdout) == filepath.Clean(s.path)) {
			continue
		}
		f, err := runtime.OpenOutput(s.path, spec.UID, spec.GID)
		if err != nil {
			return fmt.Errorf("task %q: %s: %w", spec.ID, s.name, err)
		}
		f.Close()
	}
	return nil
}

// formatSignals writes a set of signals as the labelSignals value, "9,15".
func formatSignals(set map[syscall.Signal]bool) string {
	var nums []int
	for sig, ok := range set {
		if ok {
			nums = append(nums, int(sig))
		}
	}
	slices.Sort(nums)
	parts := make([]string, len(nums))
	for i, n := range nums {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// parseSignals reads a labelSignals value; what is not a number is
// skipped.
func parseSignals(s string) map[syscall.Signal]bool {
	set := make(map[syscall.Signal]bool)
	for _, p := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(p); err == nil && n > 0 {
			set[syscall.Signal(n)] = true
		}
	}
	return set
}
