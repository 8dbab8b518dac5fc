package controller

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

// TestInspectBackupOfAnotherFile: a file that is not a whole Phalanx state
// database is refused with what is wrong, without the name of the
// replica's working copy or a hint about another controller holding it,
// and without opening it for writing (a file cut short killed the leader
// with SIGBUS; an empty one, or another bbolt file, replaced the state
// with nothing); a state database is taken.
func TestInspectBackupOfAnotherFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := filepath.Join(dir, "state.db")
	st, err := store.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	// A state database with room in it: 4 MiB of pages.
	big := filepath.Join(dir, "big.db")
	if err := copyFile(good, big); err != nil {
		t.Fatal(err)
	}
	withDB(t, big, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("filler"))
		for i := 0; err == nil && i < 1024; i++ {
			err = b.Put([]byte(fmt.Sprint(i)), make([]byte, 4096))
		}
		return err
	})
	whole, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	withDB(t, other, func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("wal")); return err })
	newer := filepath.Join(dir, "newer.db")
	if err := copyFile(good, newer); err != nil {
		t.Fatal(err)
	}
	withDB(t, newer, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("version"), []byte{0, 0, 0, 0, 0, 0, 0, 99})
	})
	for _, tc := range []struct{ name, path, want string }{
		{"junk", write("junk.db", []byte(strings.Repeat("x", 5000))), "not restored: the file is not a state database: "},
		{"empty", write("empty.db", nil), "not restored: the file is empty"},
		{"cut short", write("cut.db", whole[:len(whole)*4/10]), "not restored: the file is cut short: its database needs "},
		{"another bbolt file", other, "not restored: the file is a bbolt database without Phalanx's state"},
		{"newer", newer, "not restored: the backup has schema version 99, and this phalanx-controller reads up to "},
	} {
		_, err := inspectBackup(tc.path)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, cluster.ErrInvalid) ||
			strings.Contains(err.Error(), ".check") || strings.Contains(err.Error(), "another controller") {
			t.Errorf("inspectBackup of %s: %v; want %q...", tc.name, err, tc.want)
		}
	}
	for _, path := range []string{good, big} {
		if _, err := inspectBackup(path); err != nil {
			t.Errorf("inspectBackup of %s: %v", filepath.Base(path), err)
		}
	}
}

// withDB runs f in a write transaction on the bbolt file at path.
func withDB(t *testing.T, path string, f func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(f); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
