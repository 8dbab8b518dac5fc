package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// command is one store method call at a given index.
type command func(s *Store, idx uint64) error

// mixedCommands is a reproducible mix of every kind of command.
func mixedCommands(n int, seed int64) []command {
	r := rand.New(rand.NewSource(seed))
	cmds := []command{
		func(s *Store, idx uint64) error { return s.RegisterNode(idx, gpuNode("n1")) },
		func(s *Store, idx uint64) error { return s.RegisterNode(idx, gpuNode("n2")) },
	}
	next := cluster.JobID(0)
	for len(cmds) < n {
		switch r.Intn(5) {
		case 0, 1:
			next++
			id := next
			req := []byte(fmt.Sprint("req", r.Intn(40)))
			cmds = append(cmds, func(s *Store, idx uint64) error {
				_, err := s.SubmitJob(idx, pendingJob(id, 1, 2), nil, req)
				return err
			})
		case 2:
			id, node, g := cluster.JobID(r.Intn(int(next)+1)), []string{"n1", "n2"}[r.Intn(2)], r.Intn(7)
			cmds = append(cmds, func(s *Store, idx uint64) error {
				_, err := s.PlaceJobs(idx, []Placement{{Job: id, Alloc: alloc([]int{g, g + 1}, node), Time: at(int(idx))}})
				return err
			})
		case 3:
			id, node := cluster.JobID(r.Intn(int(next)+1)), []string{"n1", "n2"}[r.Intn(2)]
			cmds = append(cmds, func(s *Store, idx uint64) error {
				return s.ReportTask(idx, cluster.TaskReport{JobID: id, Node: node, State: cluster.TaskExited, Time: at(int(idx))})
			})
		case 4:
			id := cluster.JobID(r.Intn(int(next) + 1))
			cmds = append(cmds, func(s *Store, idx uint64) error {
				_, err := s.CancelJobs(idx, []cluster.JobID{id}, at(int(idx)), "c", nil)
				return err
			})
		}
	}
	return cmds
}

// The database behind memory always holds a prefix of the applied
// commands: whenever the process dies, what is on disk is exactly the state
// after some index, and Raft replays the rest.
func TestWriterLeavesAConsistentPrefix(t *testing.T) {
	cmds := mixedCommands(300, 1)
	s := openTest(t, "")
	var mu sync.Mutex
	copies := map[uint64][]byte{}
	s.w.afterCommit = func(idx uint64) {
		var buf bytes.Buffer
		err := s.withDB(func(db *bolt.DB) error {
			return db.View(func(tx *bolt.Tx) error { _, err := tx.WriteTo(&buf); return err })
		})
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		copies[idx] = buf.Bytes()
		mu.Unlock()
	}
	r := rand.New(rand.NewSource(2))
	for i, c := range cmds {
		if err := c(s, uint64(i+1)); err != nil && !IsRejection(err) {
			t.Fatal(err)
		}
		if r.Intn(10) == 0 { // let the writer catch up now and then: commits of every size
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.w.afterCommit = nil
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d commits for %d commands", len(copies), len(cmds))
	if len(copies) < 2 {
		t.Fatalf("the writer committed %d times; the test needs several", len(copies))
	}
	ref := openTest(t, "")
	dir := t.TempDir()
	for i, c := range cmds {
		idx := uint64(i + 1)
		if err := c(ref, idx); err != nil && !IsRejection(err) {
			t.Fatal(err)
		}
		data, ok := copies[idx]
		if !ok {
			continue
		}
		path := filepath.Join(dir, fmt.Sprint(idx, ".db"))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		crashed := openTest(t, path)
		if got, want := dumpJSON(t, crashed), dumpJSON(t, ref); !bytes.Equal(got, want) {
			t.Fatalf("the database committed at index %d is not the state after index %d:\n%s\nwant\n%s", idx, idx, got, want)
		}
	}
}

// A commit that fails (a full disk) stops the store: the next command gets
// the error, which is not a rejection, so the FSM stops the replica.
func TestWriterFailureStopsLaterCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, NoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustSubmit(t, s, 1, 1)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.dbMu.Lock()
	s.db.Close()
	s.db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	s.dbMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	mustSubmit(t, s, 2, 2) // applied in memory; its commit fails
	if err := s.Flush(); err == nil {
		t.Fatal("Flush after a failed commit succeeded")
	}
	_, err = s.SubmitJob(3, pendingJob(3, 1, 1), nil, nil)
	if err == nil || IsRejection(err) || errors.Is(err, ErrClosed) {
		t.Fatalf("command after a failed commit = %v; want the disk error", err)
	}
}
