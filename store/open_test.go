package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
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

// A state file shorter than its database (a disk that lost its tail) is
// refused at open with what is wrong: bbolt would read past its end and
// the process would die.
func TestOpenRefusesAFileCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, NoSync())
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 300; i++ {
		j := pendingJob(cluster.JobID(i), 1, 2)
		j.Script = "#!/bin/sh\n" + strings.Repeat("#", 8000)
		if _, err := s.SubmitJob(uint64(i), j, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, NoSync()); err == nil || !strings.Contains(err.Error(), "the file is cut short: its database needs ") {
		t.Fatalf("Open of a state file cut in half: %v", err)
	}
}
