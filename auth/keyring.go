package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Keyring is the keys a daemon signs and verifies with, so that the
// cluster key changes without stopping anything. It signs with the key at
// its path (auth.key) and verifies with that one and, when they exist,
// PATH.new (the next key, being copied to every host) and PATH.old (the
// previous one, still held by hosts not switched yet). Reload reads the
// files again (the daemons do on SIGHUP). A credential names its key by a
// key ID (the JWT "kid" header: a hash of the key, never the key).
type Keyring struct {
	path string // "" for a fixed ring

	mu     sync.RWMutex
	sign   Key
	verify map[string]Key // by key ID

	// Credentials verified already, with their expiry: a client sends the
	// same one on every call for minutes, and parsing it again (JSON) was
	// a tenth of a busy leader's CPU. A reload forgets them all.
	cmu      sync.RWMutex
	verified map[string]verified
}

// verified is a credential that passed Verify.
type verified struct {
	id  Identity
	exp time.Time
}

// maxVerified bounds the cache of verified credentials; when it is full it
// starts again empty.
const maxVerified = 16384

// Suffixes of the next and previous keys beside the current one.
const (
	nextKeySuffix = ".new"
	prevKeySuffix = ".old"
)

// LoadKeyring reads the keys at path (required), path.new and path.old.
func LoadKeyring(path string) (*Keyring, error) {
	r := &Keyring{path: path}
	return r, r.Reload()
}

// Ring is a fixed keyring of one key, for tests and one-off tools.
func Ring(k Key) *Keyring {
	return &Keyring{sign: k, verify: map[string]Key{keyID(k): k}}
}

// Reload reads the key files again. On an error the keys stay as they
// were.
func (r *Keyring) Reload() error {
	if r.path == "" {
		return nil
	}
	sign, err := LoadKey(r.path)
	if err != nil {
		return err
	}
	verify := map[string]Key{keyID(sign): sign}
	for _, extra := range []string{r.path + nextKeySuffix, r.path + prevKeySuffix} {
		k, err := LoadKey(extra)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return err
		default:
			verify[keyID(k)] = k
		}
	}
	r.mu.Lock()
	r.sign, r.verify = sign, verify
	r.mu.Unlock()
	r.cmu.Lock()
	r.verified = nil // a retired key's credentials must not pass from memory
	r.cmu.Unlock()
	return nil
}

// Signing is the key new credentials are signed with.
func (r *Keyring) Signing() Key {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.sign
}

// IDs are the IDs of the keys the ring verifies with, the signing key's
// first.
func (r *Keyring) IDs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := []string{keyID(r.sign)}
	for id := range r.verify {
		if id != ids[0] {
			ids = append(ids, id)
		}
	}
	return ids
}

// lookup returns the key of ID id.
func (r *Keyring) lookup(id string) (Key, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.verify[id]
	return k, ok
}

// Verify checks a credential against the ring's keys at now. A credential
// seen before is known by its whole text (signature included), and only
// its expiry is checked again.
func (r *Keyring) Verify(token string, now time.Time) (Identity, error) {
	r.cmu.RLock()
	v, ok := r.verified[token]
	r.cmu.RUnlock()
	if ok {
		if now.After(v.exp.Add(clockSkew)) {
			return Identity{}, fmt.Errorf("%w at %s", ErrExpired, v.exp.UTC().Format(time.RFC3339))
		}
		return v.id, nil
	}
	id, exp, err := verify(r, token, now)
	if err != nil {
		return Identity{}, err
	}
	r.cmu.Lock()
	if r.verified == nil || len(r.verified) >= maxVerified {
		r.verified = map[string]verified{}
	}
	r.verified[token] = verified{id: id, exp: exp}
	r.cmu.Unlock()
	return id, nil
}

// keyID names a key without revealing it: the first 8 bytes of its
// SHA-256, in hex.
func keyID(k Key) string {
	sum := sha256.Sum256(k)
	return hex.EncodeToString(sum[:8])
}

// errUnknownKey says which key a credential names, for messages.
func errUnknownKey(id string) error { return unknownKeyError(id) }

// unknownKeyError is a credential signed with a key ID this cluster does
// not hold: ErrInvalid and ErrWrongKey.
type unknownKeyError string

func (e unknownKeyError) Error() string {
	return fmt.Sprintf("%v: not signed with this cluster's keys (key ID %q is not among them)", ErrInvalid, string(e))
}

func (e unknownKeyError) Is(target error) bool { return target == ErrInvalid || target == ErrWrongKey }

// ReloadOn reloads the ring each time ch delivers (a daemon passes its
// SIGHUP channel), logging the keys it now holds or why it kept the old
// ones.
func (r *Keyring) ReloadOn(ch <-chan os.Signal, log *slog.Logger) {
	go func() {
		for range ch {
			if err := r.Reload(); err != nil {
				log.Error("cluster keys not reloaded; the previous ones stay in use", "err", err)
				continue
			}
			log.Info("cluster keys reloaded", "signing", keyID(r.Signing()), "key_ids", r.IDs())
		}
	}()
}
