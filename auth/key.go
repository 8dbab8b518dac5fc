package auth

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// DefaultKeyFile is where daemons read the cluster key by default.
const DefaultKeyFile = "/etc/phalanx/auth.key"

// MinKeySize is the shortest key accepted, in bytes (HS256 wants at least
// the hash's size).
const MinKeySize = 32

// maxKeySize bounds what is read of a key file.
const maxKeySize = 4096

// Key is the cluster key.
type Key []byte

// ErrInsecureKey is returned for a key file others than its owner can read
// or write.
var ErrInsecureKey = errors.New("insecure cluster key")

// LoadKey reads the cluster key at path. The file must hold at least
// MinKeySize bytes and be readable by its owner only (as munged demands
// of its key).
func LoadKey(path string) (Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cluster key: %w (create one with `phalanx-controller keygen %s` and copy it to every host, mode 0400)", err, path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cluster key %s: %w", path, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		// Its owner could read it and sign anyone's credentials, root's too.
		return nil, fmt.Errorf("%w %s: owned by uid %d, neither root nor this daemon's user: chown %d %s", ErrInsecureKey, path, st.Uid, os.Geteuid(), path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w %s: mode %04o lets other users read or change it: chmod 0400 %s", ErrInsecureKey, path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeySize))
	if err != nil {
		return nil, fmt.Errorf("cluster key %s: %w", path, err)
	}
	if len(data) < MinKeySize {
		return nil, fmt.Errorf("cluster key %s holds %d bytes: at least %d are needed (create a new one with `phalanx-controller keygen`)", path, len(data), MinKeySize)
	}
	return Key(data), nil
}

// WriteNewKey writes a new random key to path, readable by its owner
// only. It refuses to replace an existing file.
func WriteNewKey(path string) (Key, error) {
	k := make(Key, MinKeySize*2)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
	if err != nil {
		return nil, fmt.Errorf("write cluster key: %w", err)
	}
	if _, err := f.Write(k); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("write cluster key %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return k, f.Close()
}
