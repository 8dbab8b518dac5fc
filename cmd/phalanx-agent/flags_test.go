package main

import (
	"io"
	"os"
	"testing"
)

// A bad flag is one line saying what is wrong and where the flags are
// listed; the usage, 70 lines of it, used to come first on stderr and
// push the error out of sight.
func TestBadFlagIsOneLine(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	_, err = parseFlags([]string{"--bogus"})
	os.Stderr = stderr
	w.Close()
	printed, _ := io.ReadAll(r)
	want := "flag provided but not defined: -bogus (phalanx-agent --help lists the flags)"
	if err == nil || err.Error() != want || len(printed) > 0 {
		t.Errorf("parseFlags(--bogus): %v, and printed %q; want %q and nothing printed", err, printed, want)
	}
}

// Negative fake device counts are refused, not taken for the host's own.
func TestNegativeFakeDevices(t *testing.T) {
	for _, arg := range []string{"--fake-nics=-2", "--fake-gpus=-1"} {
		if _, err := parseFlags([]string{arg}); err == nil || err.Error() != "--fake-gpus and --fake-nics take 0 (the host's own) or more" {
			t.Errorf("parseFlags(%s): %v; want it refused", arg, err)
		}
	}
}
