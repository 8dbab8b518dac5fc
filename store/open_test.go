package store

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenSaysWhenAnotherHoldsIt: a state database another process (here
// another Store) has open is refused, after bbolt's lock timeout, with the
// hint; one that is not a database is refused without it.
func TestOpenSaysWhenAnotherHoldsIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := Open(path); err == nil || !strings.HasSuffix(err.Error(), "(is another controller using it?)") {
		t.Errorf("second open: %v, want the hint about another controller", err)
	}
	if _, err := Open(t.TempDir()); err == nil || strings.Contains(err.Error(), "another controller") {
		t.Errorf("open of a directory: %v, want an error without the hint", err)
	}
}
