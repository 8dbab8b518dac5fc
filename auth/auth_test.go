package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testKey(t *testing.T) Key {
	t.Helper()
	k, err := WriteNewKey(filepath.Join(t.TempDir(), "auth.key"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var alice = Identity{User: "alice", UID: 1000, GID: 100, Kind: KindLocal}

func TestIssueVerify(t *testing.T) {
	k := testKey(t)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tok, err := Issue(k, alice, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(k, tok, now.Add(59*time.Second))
	if err != nil || got != alice {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, alice)
	}
	if _, err := Verify(k, tok, now.Add(time.Minute+clockSkew+time.Second)); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired credential: %v, want ErrExpired", err)
	}
	if _, err := Verify(k, tok, now.Add(-time.Hour)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("credential issued in the future: %v, want ErrInvalid", err)
	}
	if _, err := Verify(testKey(t), tok, now); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not signed with this cluster's key") {
		t.Fatalf("credential of another key: %v", err)
	}
	if _, err := Verify(k, "", now); !errors.Is(err, ErrNoCredential) {
		t.Fatalf("no credential: %v", err)
	}
}

// A credential whose payload was edited (to claim root), or that names
// another algorithm, is refused.
func TestVerifyRefusesTampering(t *testing.T) {
	k := testKey(t)
	now := time.Now()
	tok, err := Issue(k, alice, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(payload), `"uid":1000`, `"uid":0`, 1)
	if forged == string(payload) {
		t.Fatalf("payload %s has no uid claim to edit", payload)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(forged))
	if _, err := Verify(k, strings.Join(parts, "."), now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("edited payload: %v, want ErrInvalid", err)
	}
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	if _, err := Verify(k, none+"."+parts[1]+".", now); !errors.Is(err, ErrInvalid) {
		t.Fatalf(`alg "none": %v, want ErrInvalid`, err)
	}
	bad := alice
	bad.Kind = "superuser"
	tok, err = Issue(k, bad, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(k, tok, now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown kind: %v, want ErrInvalid", err)
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "auth.key")
	k, err := WriteNewKey(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadKey(path)
	if err != nil || string(got) != string(k) {
		t.Fatalf("LoadKey = %v; want the key written", err)
	}
	if _, err := WriteNewKey(path); err == nil {
		t.Fatal("WriteNewKey replaced an existing key")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(path); !errors.Is(err, ErrInsecureKey) || !strings.Contains(err.Error(), "chmod 0400") {
		t.Fatalf("world-readable key: %v", err)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("secret"), 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(short); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("short key: %v", err)
	}
	if _, err := LoadKey(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "keygen") {
		t.Fatalf("missing key: %v", err)
	}
	if os.Geteuid() == 0 { // root can give the key away: its new owner could sign root's credentials
		if err := os.Chmod(path, 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKey(path); !errors.Is(err, ErrInsecureKey) || !strings.Contains(err.Error(), "owned by uid 4242") {
			t.Fatalf("a key another user owns: %v", err)
		}
	}
}

// The socket issues a credential for the uid the kernel reports.
func TestSocketIssuesForPeer(t *testing.T) {
	k := testKey(t)
	path := filepath.Join(t.TempDir(), "run", "auth.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go (&Server{Keys: Ring(k)}).Serve(l)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode %v, %v: every local user must be able to connect", fi.Mode(), err)
	}
	tok, err := Fetch(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := Verify(k, tok, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if id.UID != uint32(os.Getuid()) || id.GID != uint32(os.Getgid()) || id.Kind != KindLocal {
		t.Fatalf("credential for %+v; this process is uid %d gid %d", id, os.Getuid(), os.Getgid())
	}
	if exp := expiry(tok); exp.Before(time.Now().Add(LocalLifespan-time.Minute)) || exp.After(time.Now().Add(LocalLifespan+time.Minute)) {
		t.Fatalf("local credential expires at %v, want in about %v", exp, LocalLifespan)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("second server on a live socket: %v", err)
	}
}

func TestFetchWithoutSocket(t *testing.T) {
	_, err := Fetch(context.Background(), filepath.Join(t.TempDir(), "none.sock"))
	if err == nil || !strings.Contains(err.Error(), "PHX_TOKEN") {
		t.Fatalf("Fetch with no socket: %v; want advice naming PHX_TOKEN", err)
	}
}

// A Source keeps its credential until shortly before it expires.
func TestSourceRefreshes(t *testing.T) {
	k := testKey(t)
	now := time.Now()
	fetches := 0
	s := NewSource(func(context.Context) (string, error) {
		fetches++
		return Issue(k, alice, now, time.Minute)
	})
	s.now = func() time.Time { return now }
	for range 3 {
		if _, err := s.Token(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if fetches != 1 {
		t.Fatalf("%d fetches for three calls within the lifespan, want 1", fetches)
	}
	s.now = func() time.Time { return now.Add(time.Minute - refreshBefore + time.Second) }
	if _, err := s.Token(context.Background()); err != nil || fetches != 2 {
		t.Fatalf("near expiry: %d fetches, %v; want a second fetch", fetches, err)
	}
}

func TestClaimed(t *testing.T) {
	tok, err := Issue(testKey(t), alice, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := Claimed(tok); !ok || id != alice {
		t.Fatalf("Claimed = %+v, %v; want %+v", id, ok, alice)
	}
	if _, ok := Claimed("not a token"); ok {
		t.Fatal("Claimed read a name from garbage")
	}
}

func TestNodeCredential(t *testing.T) {
	k := testKey(t)
	now := time.Now()
	tok, err := Issue(k, NodeIdentity("gpu001"), now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := Verify(k, tok, now); err != nil || id.Kind != KindNode || id.Node != "gpu001" || id.String() != "node gpu001" {
		t.Fatalf("Verify = %+v, %v", id, err)
	}
	bad := NodeIdentity("")
	if tok, err = Issue(k, bad, now, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(k, tok, now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a node credential naming no node: %v, want ErrInvalid", err)
	}
}

// A key change without a stop: a ring verifies with auth.key, auth.key.new
// and auth.key.old, signs with auth.key, and Reload follows the files.
func TestKeyringRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "auth.key")
	oldKey, err := WriteNewKey(path)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := LoadKeyring(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	signedOld, _ := Issue(oldKey, alice, now, time.Hour)
	// 1. The next key is copied to every host as auth.key.new: accepted,
	//    not yet used to sign.
	newKey, err := WriteNewKey(path + nextKeySuffix)
	if err != nil {
		t.Fatal(err)
	}
	signedNew, _ := Issue(newKey, alice, now, time.Hour)
	if _, err := ring.Verify(signedNew, now); err == nil {
		t.Fatal("a credential of a key not loaded yet was accepted")
	}
	if err := ring.Reload(); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"old": signedOld, "new": signedNew} {
		if _, err := ring.Verify(tok, now); err != nil {
			t.Errorf("step 1, %s key's credential: %v", name, err)
		}
	}
	if !bytes.Equal(ring.Signing(), oldKey) {
		t.Error("step 1 signs with the next key already")
	}
	// 2. Every host switches: auth.key -> auth.key.old, auth.key.new -> auth.key.
	if err := os.Rename(path, path+prevKeySuffix); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+nextKeySuffix, path); err != nil {
		t.Fatal(err)
	}
	if err := ring.Reload(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ring.Signing(), newKey) {
		t.Error("step 2 does not sign with the new key")
	}
	if _, err := ring.Verify(signedOld, now); err != nil {
		t.Errorf("step 2, a host not switched yet: %v", err)
	}
	// 3. auth.key.old is removed: its credentials are refused, saying so.
	if err := os.Remove(path + prevKeySuffix); err != nil {
		t.Fatal(err)
	}
	if err := ring.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := ring.Verify(signedOld, now); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not signed with this cluster's keys") {
		t.Errorf("step 3, the retired key's credential: %v", err)
	}
	// A broken file leaves the ring as it was.
	if err := os.WriteFile(path+nextKeySuffix, []byte("short"), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := ring.Reload(); err == nil {
		t.Error("a short next key was loaded")
	}
	if _, err := ring.Verify(signedNew, now); err != nil {
		t.Errorf("after a failed reload: %v", err)
	}
}

// Listen replaces a stale socket but never removes a file that is not one.
func TestListenKeepsOtherFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.sock")
	if err := os.WriteFile(path, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v", err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "precious" {
		t.Fatalf("the file at the socket path: %q, %v", data, err)
	}
	stale := filepath.Join(t.TempDir(), "stale.sock")
	l, err := Listen(stale)
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // leaves the socket file, as a crashed daemon does
	l, err = Listen(stale)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l.Close()
}

// A credential verified once is known from memory after, but still
// expires, and a reload (a key change) forgets it.
func TestKeyringRemembersVerified(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "auth.key")
	k, err := WriteNewKey(path)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := LoadKeyring(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, _ := Issue(k, alice, now, time.Minute)
	for range 2 {
		if id, err := ring.Verify(tok, now); err != nil || id != alice {
			t.Fatalf("Verify = %+v, %v", id, err)
		}
	}
	if len(ring.verified) != 1 {
		t.Fatalf("%d credentials remembered, want 1", len(ring.verified))
	}
	if _, err := ring.Verify(tok, now.Add(time.Minute+clockSkew+time.Second)); !errors.Is(err, ErrExpired) {
		t.Fatalf("a remembered credential past its expiry: %v, want ErrExpired", err)
	}
	// The key is retired: the remembered credential must not pass.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteNewKey(path); err != nil {
		t.Fatal(err)
	}
	if err := ring.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := ring.Verify(tok, now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a remembered credential of a retired key: %v, want ErrInvalid", err)
	}
}

// Two daemons on one host: the first serves the auth socket, the second
// waits, and takes it over within a few seconds of the first stopping;
// local users get credentials throughout, but for that gap.
func TestSocketTakenOverWhenItsServerStops(t *testing.T) {
	k := testKey(t)
	path := filepath.Join(t.TempDir(), "run", "auth.sock")
	stopFirst, err := ServeSocket(path, Ring(k), nil)
	if err != nil {
		t.Fatal(err)
	}
	stopSecond, err := ServeSocket(path, Ring(k), nil)
	if err != nil {
		t.Fatalf("a second daemon on the host: %v; want it to wait for the socket", err)
	}
	defer stopSecond()
	if _, err := Fetch(context.Background(), path); err != nil {
		t.Fatalf("credential from the first daemon: %v", err)
	}
	stopFirst()
	deadline := time.Now().Add(5 * holdPoll)
	for {
		tok, err := Fetch(context.Background(), path)
		if err == nil {
			if _, err := Verify(k, tok, time.Now()); err != nil {
				t.Fatalf("credential from the second daemon: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no daemon serves the socket %s after the first stopped: %v", 5*holdPoll, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopSecond()
	if _, err := Fetch(context.Background(), path); err == nil {
		t.Error("the socket is still served after both daemons stopped")
	}
	// A file that is not a socket is not waited for: it stays an error.
	other := filepath.Join(t.TempDir(), "auth.sock")
	if err := os.WriteFile(other, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ServeSocket(other, Ring(k), nil); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("ServeSocket over a regular file: %v", err)
	}
}

// A lock file another user made (in a directory others may write) is
// refused: its maker could hold it and serve the socket in the daemon's
// place. Checked as root, who can give the file away.
func TestHoldRefusesAnotherUsersLock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file another user's")
	}
	path := filepath.Join(t.TempDir(), "auth.sock")
	if err := os.WriteFile(path+".lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path+".lock", 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if _, err := ServeSocket(path, Ring(testKey(t)), nil); err == nil || !strings.Contains(err.Error(), "belongs to uid 4242") {
		t.Fatalf("ServeSocket with another user's lock file: %v; want a refusal naming its owner", err)
	}
}
