package store

import (
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Checking a file before it is opened for writing. bbolt maps a database
// file into memory and trusts its meta page for how long it is: a file cut
// short (an interrupted copy of a backup, a disk that lost its tail) makes
// the first read past its end kill the process with SIGBUS, and an empty
// file is taken as a new database. A replica checks its own state file's
// length at every start (openDB); a backup an administrator restores is
// checked whole first (VerifyBackup).

// errEmpty: a file of zero bytes is no backup (bbolt would make it a new
// database, and a restore of it would empty the cluster).
var errEmpty = errors.New("the file is empty")

// ErrCutShort: the file is shorter than the database it holds (an
// interrupted copy, a full disk).
var ErrCutShort = errors.New("the file is cut short")

// VerifyBackup checks that the file at path is a whole Phalanx state
// database: not empty, not cut short, every page in order (bbolt's own
// check), with a Phalanx schema version this binary reads. It opens the
// file read-only and changes nothing.
func VerifyBackup(path string) error {
	db, err := openReadOnly(path)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return fmt.Errorf("the file is damaged: %w", err)
		}
		switch v := version(tx); {
		case v == 0:
			return errors.New("the file is a bbolt database without Phalanx's state (no schema version)")
		case v > SchemaVersion:
			return fmt.Errorf("the backup has schema version %d, and this phalanx-controller reads up to %d: restore it with the release that wrote it, or a later one", v, SchemaVersion)
		}
		return nil
	})
}

// checkLength refuses an existing, non-empty database file shorter than
// its meta page says; a missing or empty file is left to bbolt (a new
// database).
func checkLength(path string) error {
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return nil
	}
	db, err := openReadOnly(path)
	if err != nil {
		return err
	}
	return db.Close()
}

// openReadOnly opens the database at path read-only once it has checked
// that the file is as long as the database it holds.
func openReadOnly(path string) (*bolt.DB, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() == 0 {
		return nil, errEmpty
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout): // its file lock is held
		return nil, fmt.Errorf("%w (is another controller using it?)", err)
	case err != nil:
		return nil, fmt.Errorf("the file is not a state database: %w", err)
	}
	var need int64
	db.View(func(tx *bolt.Tx) error { need = tx.Size(); return nil })
	if need > fi.Size() {
		db.Close()
		return nil, fmt.Errorf("%w: its database needs %d bytes and it has %d (an interrupted copy?)", ErrCutShort, need, fi.Size())
	}
	return db, nil
}
