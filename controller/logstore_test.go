package controller

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// writeBoltLog writes a raft.db as releases before the WAL did: entries
// first..last and the stable values raft keeps.
func writeBoltLog(t *testing.T, dir string, first, last uint64, vote bool) {
	t.Helper()
	b, err := raftboltdb.NewBoltStore(filepath.Join(dir, boltLogFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if last > 0 {
		var logs []*raft.Log
		for i := first; i <= last; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: 1 + i/100, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", i))})
		}
		if err := b.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	if vote {
		for k, v := range map[string]uint64{"CurrentTerm": 7, "LastVoteTerm": 6} {
			if err := b.SetUint64([]byte(k), v); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Set([]byte("LastVoteCand"), []byte("ctl2")); err != nil {
			t.Fatal(err)
		}
	}
}

// checkLog fails unless s holds exactly entries first..last as
// writeBoltLog wrote them.
func checkLog(t *testing.T, s logStore, first, last uint64) {
	t.Helper()
	gotFirst, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	gotLast, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if gotFirst != first || gotLast != last {
		t.Fatalf("log holds [%d, %d], want [%d, %d]", gotFirst, gotLast, first, last)
	}
	for i := first; i <= last && last > 0; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if want := fmt.Sprintf("entry %d", i); string(l.Data) != want || l.Term != 1+i/100 || l.Index != i {
			t.Fatalf("entry %d = index %d term %d %q, want term %d %q", i, l.Index, l.Term, l.Data, 1+i/100, want)
		}
	}
}

func checkVote(t *testing.T, s logStore, term, voteTerm uint64, cand string) {
	t.Helper()
	for k, want := range map[string]uint64{"CurrentTerm": term, "LastVoteTerm": voteTerm} {
		if got, err := s.GetUint64([]byte(k)); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", k, got, err, want)
		}
	}
	if got, err := s.Get([]byte("LastVoteCand")); err != nil || string(got) != cand {
		t.Errorf("LastVoteCand = %q, %v; want %q", got, err, cand)
	}
}

func TestLogStoreMovesBoltLogToWAL(t *testing.T) {
	dir := t.TempDir()
	// A log whose head was compacted by a snapshot, as a long-running
	// replica's is.
	writeBoltLog(t, dir, 41, 1300, true)
	s, err := openLogStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkLog(t, s, 41, 1300)
	checkVote(t, s, 7, 6, "ctl2")
	// The moved log keeps working: appends continue it, and it survives
	// a reopen.
	if err := s.StoreLogs([]*raft.Log{{Index: 1301, Term: 14, Data: []byte("entry 1301")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, boltLogFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("raft.db still there after the move: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, walTmpDirName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("wal.new still there after the move: %v", err)
	}
	s, err = openLogStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, 41, 1301)
	checkVote(t, s, 7, 6, "ctl2")
}

// A replica that crashed during the move finds raft.db and a partial
// wal.new: raft.db is still the log, and the move is done again.
func TestLogStoreMoveRedoneAfterCrash(t *testing.T) {
	dir := t.TempDir()
	writeBoltLog(t, dir, 1, 250, true)
	partial := filepath.Join(dir, walTmpDirName)
	if err := os.Mkdir(partial, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(partial, "00000000000000000001-0000000000000001.wal"), []byte("torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := openLogStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, 1, 250)
	checkVote(t, s, 7, 6, "ctl2")
}

// A crash after the rename but before raft.db was removed: the WAL is the
// log, and the stale raft.db must not be copied over it again.
func TestLogStoreStaleBoltLogAfterMoveRemoved(t *testing.T) {
	dir := t.TempDir()
	writeBoltLog(t, dir, 1, 20, true)
	s, err := openLogStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs([]*raft.Log{{Index: 21, Term: 1, Data: []byte("entry 21")}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	writeBoltLog(t, dir, 1, 5, false) // what an interrupted start would have left
	if s, err = openLogStore(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, 1, 21)
	if _, err := os.Stat(filepath.Join(dir, boltLogFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale raft.db not removed: %v", err)
	}
}

// A raft.db that was created but never written (a replica that stopped
// before joining anything) moves to an empty WAL.
func TestLogStoreMovesEmptyBoltLog(t *testing.T) {
	dir := t.TempDir()
	writeBoltLog(t, dir, 0, 0, false)
	s, err := openLogStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, 0, 0)
	checkVote(t, s, 0, 0, "")
	existing, err := raft.HasExistingState(s, s, raft.NewInmemSnapshotStore())
	if err != nil || existing {
		t.Fatalf("an empty moved log reads as existing Raft state (%v, %v): the replica would not bootstrap", existing, err)
	}
}

func TestLogStoreNewDataDir(t *testing.T) {
	dir := t.TempDir()
	s, err := openLogStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	logs := []*raft.Log{{Index: 1, Term: 1, Data: []byte("entry 1")}, {Index: 2, Term: 1, Data: []byte("entry 2")}}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = openLogStore(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, 1, 2)
	var l raft.Log
	if err := s.GetLog(2, &l); err != nil || !bytes.Equal(l.Data, []byte("entry 2")) {
		t.Fatalf("entry 2 after reopen: %q, %v", l.Data, err)
	}
}

// A follower drops the tail of its log when a new leader did not have it
// (raft's "clearing log suffix"), then crashes: it must start again with
// the log it kept, and go on from there.
func TestLogStoreTailTruncationSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := openLogStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	appendEntries(t, s, 1, 100)
	if err := s.DeleteRange(61, 100); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = openLogStore(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, 1, 60)
	if err := s.StoreLogs([]*raft.Log{{Index: 61, Term: 2, Data: []byte("entry 61")}}); err != nil {
		t.Fatalf("append after the truncation: %v", err)
	}
}

// After a compaction (raft deleting the head of its log behind a snapshot)
// an entry below the first index is gone, as raft expects of every log
// store: a leader that still served it would send a follower far behind
// thousands of entries instead of its snapshot. raft-wal v0.4.1 still
// reads such entries from its unsealed tail segment; before a restart and
// after one must answer the same.
func TestLogStoreCompactedEntriesAreGone(t *testing.T) {
	dir := t.TempDir()
	s, err := openLogStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	appendEntries(t, s, 1, 100)
	if err := s.DeleteRange(1, 40); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if first, err := s.FirstIndex(); err != nil || first != 41 {
			t.Fatalf("%s: first index %d, %v; want 41", when, first, err)
		}
		for _, idx := range []uint64{1, 10, 40} {
			var l raft.Log
			if err := s.GetLog(idx, &l); !errors.Is(err, raft.ErrLogNotFound) {
				t.Errorf("%s: entry %d, compacted away, read back (%q, %v); want raft.ErrLogNotFound", when, idx, l.Data, err)
			}
		}
		checkLog(t, s, 41, 100)
	}
	check("after the compaction")
	s.Close()
	if s, err = openLogStore(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("after a restart")
}

// appendEntries appends entries first..last, as checkLog expects them.
func appendEntries(t *testing.T, s logStore, first, last uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := first; i <= last; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1 + i/100, Data: []byte(fmt.Sprintf("entry %d", i))})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
}
