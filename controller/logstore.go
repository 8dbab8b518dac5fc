package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/migrate"
	"github.com/phalanx-hpc/phalanx/internal/durable"
	bolt "go.etcd.io/bbolt"
)

// The Raft log and stable store.
//
// The log lives in DataDir/wal, a hashicorp/raft-wal write-ahead log:
// entries are appended to 64 MiB segment files, with one fdatasync per
// appended batch; the segment list and the stable store (current term and
// vote) are in its meta database, wal/wal-meta.db (bbolt). A submit's
// latency is two log appends in a row (the leader's, then a follower's),
// so the log's fsyncs are its largest part: raft-boltdb, which this
// replaces, takes two fdatasyncs per commit and rewrites B+tree pages for
// each append (about 0.5 ms per append on the benchmark machine against
// 0.2 ms for the WAL).
//
// Replicas of earlier releases kept the log and stable store in
// DataDir/raft.db (raft-boltdb). openLogStore moves such a log into the
// WAL once, at start: it copies the stable values and every entry into
// DataDir/wal.new, syncs it, renames it to wal, syncs the directory and
// only then removes raft.db. A crash before the rename leaves raft.db the
// log (wal.new is discarded and the copy redone at the next start); after
// it, the WAL is the log and a raft.db left behind is removed.

// Names in the data directory.
const (
	walDirName      = "wal"
	walTmpDirName   = "wal.new"
	boltLogFileName = "raft.db"
)

// Keys hashicorp/raft writes to its stable store: two through SetUint64,
// one through Set.
var (
	stableUintKeys  = [][]byte{[]byte("CurrentTerm"), []byte("LastVoteTerm")}
	stableBytesKeys = [][]byte{[]byte("LastVoteCand")}
)

// logStore is the Raft log and stable store of a replica.
type logStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// openLogStore opens the replica's Raft log in dataDir, moving an earlier
// release's raft.db into it first.
func openLogStore(dataDir string) (logStore, error) {
	dir := filepath.Join(dataDir, walDirName)
	boltPath := filepath.Join(dataDir, boltLogFileName)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(boltPath); err == nil {
			if err := migrateBoltLog(dataDir); err != nil {
				return nil, fmt.Errorf("move raft log %s to %s: %w (raft.db is untouched: the replica starts from it again)", boltPath, dir, err)
			}
		} else if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, fmt.Errorf("raft log: %w", err)
		}
	}
	// A raft.db beside a WAL is a migration's leftover: the WAL has it all.
	if err := os.Remove(boltPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove %s, already copied to %s: %w", boltPath, dir, err)
	}
	w, err := openWAL(dir)
	if err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", dir, err)
	}
	return walLog{w}, nil
}

// walLog is the WAL as raft's log store. raft-wal (v0.4.1) keeps reading
// entries a compaction removed while they are in its unsealed tail
// segment (the tail's reader does not learn the new first index), and only
// forgets them at a restart. raft treats any entry GetLog returns as
// present, so a leader sent a follower that was down for thousands of
// entries the compacted ones instead of its snapshot, or the snapshot,
// depending on whether it had restarted since. Below the first index an
// entry is gone (TestLogStoreCompactedEntriesAreGone).
type walLog struct{ *wal.WAL }

// raft asks the log store whether it is monotonic (raft-wal is: a restore
// resets it); the wrapper must keep answering yes.
var _ raft.MonotonicLogStore = walLog{}

// GetLog implements raft.LogStore.
func (w walLog) GetLog(index uint64, l *raft.Log) error {
	first, err := w.WAL.FirstIndex()
	if err != nil {
		return err
	}
	if index < first {
		return raft.ErrLogNotFound
	}
	return w.WAL.GetLog(index, l)
}

// openWAL opens the WAL in dir. raft-wal is pinned at v0.4.1 or later:
// v0.4.0 marked a tail segment sealed on a tail truncation (a follower
// dropping entries a new leader did not have) without writing its index,
// and the replica could not start again (TestLogStoreTailTruncationSurvivesRestart).
func openWAL(dir string) (*wal.WAL, error) { return wal.Open(dir) }

// migrateBoltLog copies raft.db into a new WAL and puts it in place.
func migrateBoltLog(dataDir string) error {
	tmp := filepath.Join(dataDir, walTmpDirName)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	src, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dataDir, boltLogFileName), NoSync: true,
		BoltOptions: &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType, NoFreelistSync: true}})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := openWAL(tmp)
	if err != nil {
		return err
	}
	if err := copyLog(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dataDir, walDirName)); err != nil {
		return err
	}
	return durable.SyncDir(dataDir)
}

// copyLogBatchBytes is how much log data one append of a migration carries.
const copyLogBatchBytes = 4 << 20

// copyLog copies the stable values raft keeps, then every log entry.
func copyLog(dst, src logStore) error {
	for _, k := range stableUintKeys {
		v, err := src.GetUint64(k)
		if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
			return fmt.Errorf("read %s: %w", k, err)
		}
		if err := dst.SetUint64(k, v); err != nil {
			return fmt.Errorf("write %s: %w", k, err)
		}
	}
	for _, k := range stableBytesKeys {
		v, err := src.Get(k)
		if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
			return fmt.Errorf("read %s: %w", k, err)
		}
		if err := dst.Set(k, v); err != nil {
			return fmt.Errorf("write %s: %w", k, err)
		}
	}
	if last, err := src.LastIndex(); err != nil || last == 0 {
		return err // an empty log has nothing more to copy
	}
	return migrate.CopyLogs(context.Background(), dst, src, copyLogBatchBytes, nil)
}
