package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// ErrClosed is returned by every method of a closed store (or one whose
// Restore could not reopen its database).
var ErrClosed = errors.New("store: closed")

// Store is the replicated state, in memory and on disk (see the package
// documentation). It is safe for concurrent use; commands are meant to be
// applied by one goroutine (the FSM's), in index order.
type Store struct {
	path string
	opts options

	// mu guards st and the watch channels. Commands hold it for writing
	// while they apply; reads hold it for reading while they copy.
	mu      sync.RWMutex
	st      *state
	closed  bool
	applied chan struct{} // closed at the next applied command
	// pmu guards unflushed: the payloads (scripts and environments) of
	// jobs applied but not yet committed to disk. Payloads live on disk
	// only, like Slurm's job scripts: memory does not grow with a queue of
	// big scripts, and a job's payload is read when it is launched or shown.
	pmu       sync.Mutex
	unflushed map[cluster.JobID][]byte
	// wmu guards watches, per node a channel closed at its next change.
	// Apply closes them holding mu for writing; NodeJobs makes them
	// holding mu for reading, so no change falls between a read and its
	// channel.
	wmu     sync.Mutex
	watches map[string]chan struct{}

	w *writer

	// dbMu guards db: the writer and reads of finished jobs hold it for
	// reading; Restore and Close swap or close the database under it.
	dbMu sync.RWMutex
	db   *bolt.DB
}

type options struct {
	noSync      bool
	commitDelay time.Duration
	halfLife    time.Duration // of fair share's usage
}

// DefaultCommitDelay is how long applied commands may wait to be committed
// to disk together (see writer).
const DefaultCommitDelay = 100 * time.Millisecond

// Option tunes Open.
type Option func(*options)

// NoSync skips fsync on commit: for tests and throwaway clusters only. The
// Raft log's own durability is not affected.
func NoSync() Option { return func(o *options) { o.noSync = true } }

// DecayHalfLife sets the half-life of fair share's usage (Usage; default
// cluster.DefaultDecayHalfLife; 0 or less: no decay).
func DecayHalfLife(d time.Duration) Option {
	return func(o *options) { o.halfLife = max(d, 0) }
}

// CommitDelay sets how long applied commands may wait to be committed to
// disk together (default DefaultCommitDelay; 0: at once).
func CommitDelay(d time.Duration) Option { return func(o *options) { o.commitDelay = d } }

// Open opens (creating if needed) the state database at path, brings it to
// the current schema version and loads it into memory.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{commitDelay: DefaultCommitDelay, halfLife: cluster.DefaultDecayHalfLife}
	for _, opt := range opts {
		opt(&o)
	}
	db, err := openDB(path, o)
	if err != nil {
		return nil, err
	}
	st, err := load(db, o.halfLife)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("load state database %s: %w", path, err)
	}
	s := &Store{path: path, opts: o, st: st, db: db, watches: map[string]chan struct{}{}, applied: make(chan struct{}),
		unflushed: map[cluster.JobID][]byte{}}
	s.w = newWriter(s, st.applied, o.commitDelay)
	return s, nil
}

func openDB(path string, o options) (*bolt.DB, error) {
	if err := checkLength(path); err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: time.Second,
		NoSync:  o.noSync,
		// Like etcd: the free list is a hash map (fast with many free
		// pages) and is not written at every commit; opening after a crash
		// rebuilds it by scanning.
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true,
	})
	if errors.Is(err, bolterrors.ErrTimeout) { // its file lock is held
		return nil, fmt.Errorf("open state database %s: %w (is another controller using it?)", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	if err := migrate(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return db, nil
}

// Close waits for the writer to commit what was applied, then closes the
// database. Later calls return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.wmu.Lock()
	for node, ch := range s.watches {
		close(ch)
		delete(s.watches, node)
	}
	s.wmu.Unlock()
	close(s.applied)
	s.applied = make(chan struct{})
	s.mu.Unlock()
	s.w.close()
	werr := s.w.failure()
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	if s.db == nil {
		return werr
	}
	err := s.db.Close()
	s.db = nil
	return errors.Join(werr, err)
}

// withDB runs fn with the open database.
func (s *Store) withDB(fn func(db *bolt.DB) error) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	return fn(s.db)
}

// view runs fn in a read transaction that sees every command applied before
// the call (it waits for the writer to commit them).
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	if err := s.Flush(); err != nil {
		return err
	}
	return s.withDB(func(db *bolt.DB) error { return db.View(fn) })
}

// Flush waits until every command applied so far is committed to disk.
func (s *Store) Flush() error {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return s.w.flush()
}

// apply applies the command at Raft index idx: fn changes memory through c,
// the ops it records go to the writer, and the applied index moves to idx.
// An index already applied is skipped and returns nil. When fn rejects the
// command (an error wrapping one of cluster's sentinels: IsRejection), it
// must not have changed anything; the index is still recorded and the error
// returned. Any other error (the store is closed, the disk failed) records
// nothing: the caller must not go on as if the entry were applied.
func (s *Store) apply(idx uint64, fn func(c *change) error) error {
	if err := s.w.room(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if idx <= s.st.applied {
		return nil
	}
	c := &change{st: s.st, idx: idx}
	next, nextEvent := s.st.nextJob, s.st.nextEvent
	err := fn(c)
	if err != nil && !IsRejection(err) {
		return err
	}
	if s.st.nextJob != next {
		c.ops = append(c.ops, nextJobOp{next: s.st.nextJob})
	}
	if s.st.nextEvent != nextEvent {
		c.ops = append(c.ops, nextEventOp{next: s.st.nextEvent})
	}
	s.st.applied = idx
	if len(c.payloads) > 0 {
		s.pmu.Lock()
		for _, p := range c.payloads {
			s.unflushed[p.id] = p.payload
		}
		s.pmu.Unlock()
	}
	s.w.enqueue(entry{idx: idx, ops: c.ops})
	s.wmu.Lock()
	for node := range c.touched {
		if ch, ok := s.watches[node]; ok {
			close(ch)
			delete(s.watches, node)
		}
	}
	s.wmu.Unlock()
	close(s.applied)
	s.applied = make(chan struct{})
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
// store.
func (s *Store) AppliedIndex() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.applied
}

// DurableIndex is the applied index of the last command the writer has
// committed to disk.
func (s *Store) DurableIndex() uint64 {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.w.flushed
}

// WaitApplied waits until the command at index idx has been applied, or ctx
// ends.
func (s *Store) WaitApplied(ctx context.Context, idx uint64) error {
	for {
		s.mu.RLock()
		applied, ch, closed := s.st.applied, s.applied, s.closed
		s.mu.RUnlock()
		switch {
		case closed:
			return ErrClosed
		case applied >= idx:
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for index %d (applied %d): %w", idx, applied, ctx.Err())
		}
	}
}

func (w *writer) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
