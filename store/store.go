package store

import (
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// ErrClosed is returned by every method of a closed store (or one whose
// Restore could not reopen its database).
var ErrClosed = errors.New("store: closed")

// errSkip rolls back a transaction without reporting an error.
var errSkip = errors.New("skip")

// Store is the bbolt-backed state. It is safe for concurrent use: reads run
// in parallel with each other and with one write at a time.
type Store struct {
	path string
	// mu guards db. Every transaction holds it for reading; Restore and
	// Close hold it for writing while they swap or close the database.
	mu sync.RWMutex
	db *bolt.DB
}

// Open opens (creating if needed) the state database at path and brings it
// to the current schema version.
func Open(path string) (*Store, error) {
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	return &Store{path: path, db: db}, nil
}

func openDB(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w (is another controller using it?)", path, err)
	}
	if err := migrate(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return db, nil
}

// Close closes the database. Later calls return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// view runs fn in a read transaction.
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	return s.db.View(fn)
}

// update applies the command at Raft index idx: fn's changes and the new
// applied index commit together. An index already applied is skipped and
// returns nil. When fn rejects the command (an error wrapping one of
// cluster's sentinels: IsRejection), its changes roll back, the index is
// still recorded (the command was applied, as a rejection), and the error is
// returned. Any other failure (I/O, a full disk) records nothing: the entry
// is not applied, and the caller must not go on as if it were.
func (s *Store) update(idx uint64, fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if idx <= getUint64(meta, keyApplied) {
			return errSkip
		}
		if err := fn(tx); err != nil {
			return err
		}
		return putUint64(meta, keyApplied, idx)
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errSkip):
		return nil
	case !IsRejection(err):
		return err
	}
	if ierr := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if idx <= getUint64(meta, keyApplied) {
			return nil
		}
		return putUint64(meta, keyApplied, idx)
	}); ierr != nil {
		return errors.Join(err, fmt.Errorf("record applied index %d: %w", idx, ierr))
	}
	return err
}

// IsRejection reports whether err is a command's deterministic refusal
// (every replica refuses it the same way) rather than a local failure.
func IsRejection(err error) bool {
	for _, kind := range []error{cluster.ErrNotFound, cluster.ErrInvalid, cluster.ErrConflict, cluster.ErrUnsatisfiable} {
		if errors.Is(err, kind) {
			return true
		}
	}
	return false
}

// AppliedIndex is the Raft index of the last applied command; 0 on an empty
// store or a closed one.
func (s *Store) AppliedIndex() uint64 {
	var v uint64
	_ = s.view(func(tx *bolt.Tx) error {
		v = getUint64(tx.Bucket(bucketMeta), keyApplied)
		return nil
	})
	return v
}
