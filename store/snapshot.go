package store

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/internal/durable"
)

// Snapshot writes a consistent copy of the whole database to w, including
// every command applied before the call.
func (s *Store) Snapshot(w io.Writer) error {
	return s.view(func(tx *bolt.Tx) error {
		if _, err := tx.WriteTo(w); err != nil {
			return fmt.Errorf("write state snapshot: %w", err)
		}
		return nil
	})
}

// Restore replaces the state with the snapshot read from r, which Raft
// holds at index (0: the snapshot's own applied index). The snapshot is
// written to a temporary file beside the database, synced, migrated if it
// is from an older version, given index as its applied index when that is
// higher, and loaded; then it is renamed over the database, reopened, and
// memory is replaced. On an error before the swap the old state stays. If
// the new database cannot be reopened, the store is closed. Restore must
// not run concurrently with commands (the FSM calls it between them).
//
// A snapshot Raft took of this state holds the index it was taken at. A
// backup restored by an administrator holds the index of the cluster it
// came from, and Raft places it after the whole log: taking Raft's index
// keeps the applied index from going back, so that it still orders states
// (the controller tells agents the index their assignments were read at).
func (s *Store) Restore(r io.Reader, index uint64) error {
	if err := s.Flush(); err != nil {
		return err
	}
	tmp, err := writeTemp(s.path, r)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	db, err := openDB(tmp, s.opts)
	if err != nil {
		return fmt.Errorf("restore: snapshot is not a state database: %w", err)
	}
	err = raiseApplied(db, index)
	var st *state
	if err == nil {
		st, err = load(db, s.opts.halfLife)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}

	s.dbMu.Lock()
	if s.db == nil {
		s.dbMu.Unlock()
		return ErrClosed
	}
	if err := s.db.Close(); err != nil {
		s.dbMu.Unlock()
		return fmt.Errorf("restore: close old database: %w", err)
	}
	s.db = nil
	err = os.Rename(tmp, s.path)
	if err == nil {
		err = durable.SyncDir(filepath.Dir(s.path))
	}
	if err == nil {
		s.db, err = openDB(s.path, s.opts)
	}
	s.dbMu.Unlock()
	if err != nil {
		s.Close()
		return fmt.Errorf("restore: %w", err)
	}

	s.mu.Lock()
	st.configVersion = s.st.configVersion + 1 // what was decided on the old nodes and partitions no longer holds
	s.st = st
	s.pmu.Lock()
	s.unflushed = map[cluster.JobID][]byte{} // flushed before the swap; the new database has its own
	s.pmu.Unlock()
	s.w.reset(st.applied)
	s.wmu.Lock()
	for node, ch := range s.watches {
		close(ch)
		delete(s.watches, node)
	}
	s.wmu.Unlock()
	close(s.applied)
	s.applied = make(chan struct{})
	s.mu.Unlock()
	return nil
}

// writeTemp copies r to a new file beside path and fsyncs it.
func writeTemp(path string, r io.Reader) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".restore-*")
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("restore: write snapshot: %w", err)
	}
	return f.Name(), nil
}

// raiseApplied records index as db's applied index if it is higher.
func raiseApplied(db *bolt.DB, index uint64) error {
	return db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if index <= getUint64(meta, keyApplied) {
			return nil
		}
		return putUint64(meta, keyApplied, index)
	})
}
