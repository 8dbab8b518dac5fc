package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --shim is for plain-process tasks: with containerd it would be ignored.
func TestShimNeedsProcessRuntime(t *testing.T) {
	_, err := parseFlags([]string{"--runtime", "containerd", "--shim", "/usr/libexec/phalanx/phalanx-shim"})
	if err == nil || !strings.Contains(err.Error(), "--runtime process") {
		t.Errorf("--shim with --runtime containerd: %v, want a refusal", err)
	}
	if _, err := parseFlags([]string{"--shim", "/usr/libexec/phalanx/phalanx-shim"}); err != nil {
		t.Errorf("--shim with the default runtime: %v", err)
	}
}

func TestShimPath(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	shim := filepath.Join(dir, "phalanx-shim")
	if _, err := shimPath(shim, log); err == nil || !strings.Contains(err.Error(), "--shim "+shim) {
		t.Errorf("--shim naming nothing: %v, want an error naming the flag", err)
	}
	os.WriteFile(shim, nil, 0o644)
	if _, err := shimPath(shim, log); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Errorf("--shim naming a file that cannot run: %v", err)
	}
	os.Chmod(shim, 0o755)
	if got, err := shimPath(shim, log); err != nil || got != shim {
		t.Errorf("--shim %s: %q, %v", shim, got, err)
	}
	// This test binary has no phalanx-shim beside it: the agent's own
	// executable supervises.
	if got, err := shimPath("", log); err != nil || got != "" {
		t.Errorf("no --shim, none installed: %q, %v; want the agent itself", got, err)
	}
}
