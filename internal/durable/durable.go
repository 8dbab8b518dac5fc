// Package durable writes files so that they survive a crash: the data is
// synced before it replaces anything, and the directory after the rename
// that puts it in place.
package durable

import (
	"os"
	"path/filepath"
)

// SyncDir makes a rename (or a new file) in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// WriteFile replaces path with data, mode perm: it writes and syncs
// PATH.tmp, renames it over path and syncs the directory. A crash leaves
// either the old file or the new one, never a part of either.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}
