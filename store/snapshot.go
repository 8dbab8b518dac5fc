package store

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// State is a consistent view of everything the scheduler needs, read in
// one transaction.
type State struct {
	Nodes      []*cluster.Node      // by name
	Partitions []*cluster.Partition // in configuration order
	Active     []*cluster.Job       // pending and live jobs, by ID
}

// State reads nodes, partitions and active jobs in one read transaction.
func (s *Store) State() (*State, error) {
	st := &State{}
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		if st.Nodes, err = allNodes(tx); err != nil {
			return err
		}
		if st.Partitions, err = allPartitions(tx); err != nil {
			return err
		}
		st.Active, err = activeJobs(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Snapshot writes a consistent copy of the whole database to w.
func (s *Store) Snapshot(w io.Writer) error {
	return s.view(func(tx *bolt.Tx) error {
		if _, err := tx.WriteTo(w); err != nil {
			return fmt.Errorf("write state snapshot: %w", err)
		}
		return nil
	})
}

// Restore replaces the database with the snapshot read from r. The
// snapshot is written to a temporary file beside the database, synced and
// checked, then renamed over the database, which is reopened. Reads and
// writes wait while the swap happens; on an error before the swap the old
// database stays. If the new one cannot be opened, the store is closed.
func (s *Store) Restore(r io.Reader) error {
	tmp, err := writeTemp(s.path, r)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	db, err := openDB(tmp)
	if err != nil {
		return fmt.Errorf("restore: snapshot is not a state database: %w", err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return ErrClosed
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("restore: close old database: %w", err)
	}
	s.db = nil
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := syncDir(filepath.Dir(s.path)); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if s.db, err = openDB(s.path); err != nil {
		return fmt.Errorf("restore: reopen: %w", err)
	}
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
