// Package flagtest is for the daemons' tests of their command lines: a bad
// flag must be one line saying what is wrong, with nothing printed before
// it (the flag package prints the whole usage by default, which pushes the
// error out of sight).
package flagtest

import (
	"io"
	"os"
	"testing"
)

// RefusesInOneLine parses args with parse, capturing stderr, and fails t
// unless parse returns an error whose text is want and nothing was
// printed.
func RefusesInOneLine(t testing.TB, parse func(args []string) error, args []string, want string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stderr := os.Stderr
	os.Stderr = w
	err = parse(args)
	os.Stderr = stderr
	w.Close()
	printed, _ := io.ReadAll(r)
	if err == nil || err.Error() != want || len(printed) > 0 {
		t.Errorf("parse %q: %v, and printed %q; want %q and nothing printed", args, err, printed, want)
	}
}
