package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/auth"
)

// One replica per data dir: a second one fails at once, saying why.
func TestDataDirIsLocked(t *testing.T) {
	s := newTestServer(t, Config{})
	_, err := New(Config{DataDir: s.cfg.DataDir, RaftAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", AuthKeys: auth.Ring(testKey)})
	if err == nil {
		t.Fatal("a second controller started on a data dir in use")
	}
	if want := "in use by another phalanx-controller"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// A state.db cut short (an interrupted copy, a full disk) stops the
// replica, saying what to do, as docs/operations.md has it: start it on
// an empty data dir, and the others bring it up to date.
func TestStateCutShortSaysWhatToDo(t *testing.T) {
	s := newTestServer(t, Config{})
	dir := s.cfg.DataDir
	s.Close()
	path := filepath.Join(dir, "state.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:8192], 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{DataDir: dir, RaftAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", AuthKeys: auth.Ring(testKey)})
	want := "move " + dir + " aside and start this replica with an empty data dir: it rejoins its cluster"
	if err == nil || !strings.Contains(err.Error(), "the file is cut short") || !strings.Contains(err.Error(), want) {
		t.Errorf("start on a state.db cut short: %v; want it to say %q", err, want)
	}
}
