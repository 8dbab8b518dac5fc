package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func newCA(t *testing.T) (*CA, string) {
	t.Helper()
	dir := t.TempDir()
	ca, err := InitCA(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca, dir
}

// issueTo writes a certificate of kind for name into a directory of its
// own, with the CA's ca.crt (and ca.crl, when there is one), and loads it.
func issueTo(t *testing.T, ca *CA, caDir string, kind Kind, name string, lifespan time.Duration) (*Material, string) {
	t.Helper()
	is, err := ca.Issue(kind, name, []string{"127.0.0.1", "gpu001.example"}, lifespan, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := is.Write(dir, kind); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(caDir, CACertFile), filepath.Join(dir, CACertFile))
	m, err := Load(DirFiles(dir, kind))
	if err != nil {
		t.Fatal(err)
	}
	return m, dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestInitCAFiles(t *testing.T) {
	ca, dir := newCA(t)
	if !ca.Cert.IsCA {
		t.Fatal("the CA certificate is no CA")
	}
	for name, want := range map[string]os.FileMode{CACertFile: 0o644, CAKeyFile: 0o400} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", name, fi.Mode().Perm(), want)
		}
	}
	if _, err := InitCA(dir, time.Now()); err == nil || !strings.Contains(err.Error(), "has a CA already") {
		t.Errorf("a second ca init over the first: %v", err)
	}
	again, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cert.Equal(ca.Cert) {
		t.Error("LoadCA read another CA")
	}
	os.Chmod(filepath.Join(dir, CAKeyFile), 0o644)
	if _, err := LoadCA(dir); err == nil || !strings.Contains(err.Error(), "chmod 0400") {
		t.Errorf("a CA key others can read: %v", err)
	}
}

func TestIssueNamesHolder(t *testing.T) {
	ca, caDir := newCA(t)
	m, _ := issueTo(t, ca, caDir, KindNode, "gpu001", DefaultLifespan)
	if got := m.Self(); got.Kind != KindNode || got.Name != "gpu001" {
		t.Errorf("own certificate names %v, want node gpu001", got)
	}
	for _, bad := range []string{"", "a/b", "-x", strings.Repeat("n", 64), "gpu 1"} {
		if _, err := ca.Issue(KindNode, bad, nil, time.Hour, time.Now()); err == nil {
			t.Errorf("issued a certificate for name %q", bad)
		}
	}
	for _, bad := range []string{"a b", "", "gpu-.example", "gpu_1", "*.", "x..y"} {
		if _, err := ca.Issue(KindNode, "gpu001", []string{bad}, time.Hour, time.Now()); err == nil || !strings.Contains(err.Error(), "neither an IP address nor a DNS name") {
			t.Errorf("host %q: %v; want it refused", bad, err)
		}
	}
	is, err := ca.Issue(KindNode, "gpu001", []string{"gpu001.example", "*.gpu.example", "10.0.0.7", "fe80::1"}, time.Hour, time.Now())
	if err != nil || len(is.Leaf.DNSNames) != 2 || len(is.Leaf.IPAddresses) != 2 {
		t.Errorf("good hosts: %v, %v", is, err)
	}
	if _, err := ca.Issue(KindNode, "gpu001", nil, 20*CALifespan, time.Now()); err == nil || !strings.Contains(err.Error(), "outlive the CA") {
		t.Errorf("a certificate outliving its CA: %v", err)
	}
	if _, err := ParseKind("admin"); err == nil {
		t.Error("ParseKind took admin")
	}
}

func chainOf(m *Material) []*x509.Certificate { return []*x509.Certificate{m.cur.Load().cert.Leaf} }

func TestCheckRefusals(t *testing.T) {
	ca, caDir := newCA(t)
	server, serverDir := issueTo(t, ca, caDir, KindController, "ctl1", DefaultLifespan)
	node, _ := issueTo(t, ca, caDir, KindNode, "gpu001", DefaultLifespan)

	if p, err := server.Check(chainOf(node), KindNode); err != nil || p.Name != "gpu001" || p.Kind != KindNode {
		t.Fatalf("a good node certificate: %v %v", p, err)
	}
	if _, err := server.Check(chainOf(node), KindController); !errors.Is(err, ErrWrongKind) {
		t.Errorf("a node's certificate where a controller's is needed: %v", err)
	}
	if _, err := server.Check(nil, KindNode); err == nil {
		t.Error("no certificate passed")
	}

	// Another cluster's CA.
	other, otherDir := newCA(t)
	stranger, _ := issueTo(t, other, otherDir, KindNode, "gpu001", DefaultLifespan)
	if _, err := server.Check(chainOf(stranger), KindNode); !errors.Is(err, ErrUntrusted) {
		t.Errorf("another CA's certificate: %v", err)
	}

	// Expired, and not yet valid, by the checker's clock.
	server.now = func() time.Time { return time.Now().Add(DefaultLifespan + time.Hour) }
	_, err := server.Check(chainOf(node), KindNode)
	if !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "ca issue node gpu001") {
		t.Errorf("an expired certificate: %v", err)
	}
	server.now = func() time.Time { return time.Now().Add(-time.Hour) }
	if _, err := server.Check(chainOf(node), KindNode); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "clocks") {
		t.Errorf("a certificate not valid yet: %v", err)
	}
	server.now = time.Now

	// Revoked: refused once the daemon has the new list.
	if err := ca.Revoke(node.cur.Load().cert.Leaf.SerialNumber, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Check(chainOf(node), KindNode); err != nil {
		t.Errorf("refused before the list reached the daemon: %v", err)
	}
	copyFile(t, filepath.Join(caDir, CRLFile), filepath.Join(serverDir, CRLFile))
	if err := server.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Check(chainOf(node), KindNode); !errors.Is(err, ErrRevoked) {
		t.Errorf("a revoked certificate: %v", err)
	}
	// Revoking twice says so and changes nothing; another certificate
	// after, keeps both.
	if err := ca.Revoke(node.cur.Load().cert.Leaf.SerialNumber, time.Now()); !errors.Is(err, ErrAlreadyRevoked) {
		t.Fatalf("revoking a serial twice: %v; want ErrAlreadyRevoked", err)
	}
	node2, _ := issueTo(t, ca, caDir, KindNode, "gpu002", DefaultLifespan)
	if err := ca.Revoke(node2.cur.Load().cert.Leaf.SerialNumber, time.Now()); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(caDir, CRLFile), filepath.Join(serverDir, CRLFile))
	if err := server.Reload(); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*Material{node, node2} {
		if _, err := server.Check(chainOf(m), KindNode); !errors.Is(err, ErrRevoked) {
			t.Errorf("%v after two revocations: %v", m.Self(), err)
		}
	}
	// A list another CA signed is refused, and the daemon keeps its own.
	if err := other.Revoke(big.NewInt(7), time.Now()); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(otherDir, CRLFile), filepath.Join(serverDir, CRLFile))
	if err := server.Reload(); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Errorf("another CA's revocation list: %v", err)
	}
	if _, err := server.Check(chainOf(node), KindNode); !errors.Is(err, ErrRevoked) {
		t.Errorf("after a refused reload: %v", err)
	}
}

// A daemon does not start with its own certificate expired, revoked or
// from another CA, or with a key others can read.
func TestLoadRefusesOwnBadCertificate(t *testing.T) {
	ca, caDir := newCA(t)
	_, dir := issueTo(t, ca, caDir, KindNode, "gpu001", time.Hour)
	files := DirFiles(dir, KindNode)
	m := &Material{files: files, now: func() time.Time { return time.Now().Add(2 * time.Hour) }}
	if err := m.Reload(); !errors.Is(err, ErrExpired) {
		t.Errorf("own expired certificate: %v", err)
	}
	os.Chmod(files.Key, 0o640)
	if _, err := Load(files); err == nil || !strings.Contains(err.Error(), "chmod 0400") {
		t.Errorf("a key the group can read: %v", err)
	}
	os.Chmod(files.Key, 0o400)
	other, otherDir := newCA(t)
	_ = other
	copyFile(t, filepath.Join(otherDir, CACertFile), files.CA)
	if _, err := Load(files); !errors.Is(err, ErrUntrusted) {
		t.Errorf("own certificate from another CA: %v", err)
	}
}

// During a CA rotation ca.crt holds both CAs: certificates of either are
// accepted.
func TestCABundle(t *testing.T) {
	oldCA, oldDir := newCA(t)
	newCA2, newDir := newCA(t)
	server, serverDir := issueTo(t, oldCA, oldDir, KindController, "ctl1", DefaultLifespan)
	fresh, _ := issueTo(t, newCA2, newDir, KindNode, "gpu001", DefaultLifespan)
	if _, err := server.Check(chainOf(fresh), KindNode); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("the new CA's certificate before the bundle: %v", err)
	}
	a, _ := os.ReadFile(filepath.Join(oldDir, CACertFile))
	b, _ := os.ReadFile(filepath.Join(newDir, CACertFile))
	if err := os.WriteFile(filepath.Join(serverDir, CACertFile), append(a, b...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := server.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Check(chainOf(fresh), KindNode); err != nil {
		t.Errorf("the new CA's certificate with the bundle: %v", err)
	}
}

// handshake runs a TLS connection between the two configs over loopback
// TCP and returns each side's error.
func handshake(t *testing.T, server, client *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	done := make(chan error, 1)
	go func() {
		a, err := lis.Accept()
		if err != nil {
			done <- err
			return
		}
		s := tls.Server(a, server)
		s.SetDeadline(time.Now().Add(10 * time.Second))
		err = s.Handshake()
		if err == nil {
			_, err = io.ReadFull(s, make([]byte, 1))
		}
		s.Close()
		done <- err
	}()
	b, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(b, client)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	clientErr = c.Handshake()
	if clientErr == nil {
		_, clientErr = c.Write([]byte("x"))
	}
	serverErr = <-done
	c.Close()
	return serverErr, clientErr
}

func TestHandshakes(t *testing.T) {
	ca, caDir := newCA(t)
	ctl, _ := issueTo(t, ca, caDir, KindController, "ctl1", DefaultLifespan)
	node, nodeDir := issueTo(t, ca, caDir, KindNode, "gpu001", DefaultLifespan)
	user, err := Load(TrustFiles(filepath.Join(nodeDir, CACertFile)))
	if err != nil {
		t.Fatal(err)
	}
	// A node reaches the controller; mutual.
	if s, c := handshake(t, ctl.ServerConfig(KindNode, nil), node.ClientConfig()); s != nil || c != nil {
		t.Errorf("node to controller: server %v, client %v", s, c)
	}
	// A user without a certificate reaches the API, which does not require one.
	if s, c := handshake(t, ctl.ServerConfig(0, nil), user.ClientConfig()); s != nil || c != nil {
		t.Errorf("user to the controller API: server %v, client %v", s, c)
	}
	// ...but not a server that requires one (Raft, between controllers).
	if s, _ := handshake(t, ctl.ServerConfig(KindController, nil), user.ClientConfig()); s == nil {
		t.Error("a client with no certificate got past a server requiring a controller's")
	}
	// A node cannot join the controllers; the server logs who was refused
	// and why (the client sees only an alert).
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	if s, _ := handshake(t, ctl.ServerConfig(KindController, log), node.ClientConfig()); !errors.Is(s, ErrWrongKind) {
		t.Errorf("a node's certificate on the controllers' port: %v", s)
	}
	if !strings.Contains(logged.String(), `refused a connection" from=127.0.0.1:`) || !strings.Contains(logged.String(), "where a controller's is needed") {
		t.Errorf("the refusal logged: %q", logged.String())
	}
	// A node posing as a controller is refused by its clients.
	if _, c := handshake(t, node.ServerConfig(0, nil), user.ClientConfig()); !errors.Is(c, ErrWrongKind) {
		t.Errorf("a client reached a node posing as the controller: %v", c)
	}
}

// A daemon warns while its certificate nears expiry, and runs what it
// registered after each reload (an agent drops its connections).
func TestReloadOnAndExpiryWarning(t *testing.T) {
	ca, caDir := newCA(t)
	m, _ := issueTo(t, ca, caDir, KindNode, "gpu001", 10*24*time.Hour)
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	m.LogLoaded(log)
	if !strings.Contains(logged.String(), "expires soon") || !strings.Contains(logged.String(), "ca issue node gpu001") {
		t.Errorf("10 days before expiry: %q", logged.String())
	}
	logged.Reset()
	m.now = func() time.Time { return time.Now().Add(11 * 24 * time.Hour) }
	m.warnExpiry(log)
	if !strings.Contains(logged.String(), "has expired") {
		t.Errorf("after expiry: %q", logged.String())
	}
	m.now = time.Now

	hup := make(chan os.Signal)
	reloaded := make(chan struct{}, 1)
	m.OnReload(func() { reloaded <- struct{}{} })
	m.ReloadOn(hup, slog.New(slog.NewTextHandler(io.Discard, nil)))
	hup <- syscall.SIGHUP
	select {
	case <-reloaded:
	case <-time.After(5 * time.Second):
		t.Fatal("OnReload's function did not run after a reload")
	}
	close(hup)
}

// A chain is verified once per CA bundle: the calls that check it again
// (each of an agent's heartbeats) repeat the validity, revocation and kind
// checks, not the signatures; a reload that drops its CA refuses it at
// once.
func TestCheckVerifiesAChainOnce(t *testing.T) {
	ca, caDir := newCA(t)
	server, serverDir := issueTo(t, ca, caDir, KindController, "ctl1", DefaultLifespan)
	node, _ := issueTo(t, ca, caDir, KindNode, "gpu001", DefaultLifespan)
	checks := func() int {
		l := server.cur.Load()
		l.verified.mu.Lock()
		defer l.verified.mu.Unlock()
		return l.verified.checks
	}
	before := checks() // the daemon's own certificate, at load
	for range 3 {
		if _, err := server.Check(chainOf(node), KindNode); err != nil {
			t.Fatalf("a good node certificate: %v", err)
		}
	}
	if n := checks() - before; n != 1 {
		t.Errorf("the chain's signatures were verified %d times in 3 checks; want 1", n)
	}
	// The cheap checks still run each time: the wrong kind, and expiry.
	if _, err := server.Check(chainOf(node), KindController); !errors.Is(err, ErrWrongKind) {
		t.Errorf("a node's certificate where a controller's is needed, verified before: %v", err)
	}
	server.now = func() time.Time { return time.Now().Add(DefaultLifespan + time.Hour) }
	if _, err := server.Check(chainOf(node), KindNode); !errors.Is(err, ErrExpired) {
		t.Errorf("an expired certificate verified before: %v", err)
	}
	server.now = time.Now

	// Another CA only in the bundle: the node's chain, verified before, is
	// refused.
	_, otherDir := newCA(t)
	copyFile(t, filepath.Join(otherDir, CACertFile), filepath.Join(serverDir, CACertFile))
	if err := server.Reload(); err == nil {
		// The server's own certificate is from the old CA: the reload
		// fails and keeps the old material. Load the new bundle alone.
		t.Fatal("reload with a bundle that does not hold the daemon's own CA succeeded")
	}
	trust, err := Load(TrustFiles(filepath.Join(otherDir, CACertFile)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Check(chainOf(node), KindNode); !errors.Is(err, ErrUntrusted) {
		t.Errorf("a chain verified against another bundle: %v", err)
	}
}

// A verified chain holds only while every certificate of it is valid.
func TestVerifiedChainWindow(t *testing.T) {
	ca, caDir := newCA(t)
	node, _ := issueTo(t, ca, caDir, KindNode, "gpu001", DefaultLifespan)
	leaf := chainOf(node)[0]
	var v verifiedChains
	k := chainKey(leaf, nil)
	caCert := ca.Cert
	v.add(k, []*x509.Certificate{leaf, caCert})
	until := leaf.NotAfter
	if caCert.NotAfter.Before(until) {
		until = caCert.NotAfter
	}
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{
		{time.Now(), true},
		{until, true},
		{until.Add(time.Second), false},
		{leaf.NotBefore.Add(-time.Second), false},
	} {
		if got := v.holds(k, tc.at); got != tc.want {
			t.Errorf("holds at %v = %v; want %v", tc.at, got, tc.want)
		}
	}
	if v.holds(chainKey(caCert, nil), time.Now()) {
		t.Error("another chain holds")
	}
}

// BenchmarkCheck is the cost of checking a node's chain on a call: with
// its signatures verified before (each call on a connection after the
// first) and without (a new connection's first call).
func BenchmarkCheck(b *testing.B) {
	dir := b.TempDir()
	ca, err := InitCA(dir, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	is, err := ca.Issue(KindNode, "gpu001", nil, DefaultLifespan, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	if err := is.Write(dir, KindNode); err != nil {
		b.Fatal(err)
	}
	m, err := Load(DirFiles(dir, KindNode))
	if err != nil {
		b.Fatal(err)
	}
	chain := []*x509.Certificate{m.cur.Load().cert.Leaf}
	b.Run("verified", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Check(chain, KindNode); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first", func(b *testing.B) {
		l := m.cur.Load()
		for b.Loop() {
			var v verifiedChains
			if err := v.verify(chain[0], nil, l.roots, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A reload that drops a CA from the bundle forgets the chains verified
// against it: the daemon's own certificate is from the CA kept, the
// node's from the one dropped, checked (and remembered) before.
func TestReloadForgetsVerifiedChains(t *testing.T) {
	kept, keptDir := newCA(t)
	dropped, droppedDir := newCA(t)
	server, serverDir := issueTo(t, kept, keptDir, KindController, "ctl1", DefaultLifespan)
	node, _ := issueTo(t, dropped, droppedDir, KindNode, "gpu001", DefaultLifespan)
	a, _ := os.ReadFile(filepath.Join(keptDir, CACertFile))
	b, _ := os.ReadFile(filepath.Join(droppedDir, CACertFile))
	bundle := filepath.Join(serverDir, CACertFile)
	if err := os.WriteFile(bundle, append(a, b...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := server.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Check(chainOf(node), KindNode); err != nil {
		t.Fatalf("a node certificate of a CA in the bundle: %v", err)
	}
	if err := os.WriteFile(bundle, a, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := server.Reload(); err != nil {
		t.Fatalf("reload with the daemon's own CA alone: %v", err)
	}
	if _, err := server.Check(chainOf(node), KindNode); !errors.Is(err, ErrUntrusted) {
		t.Errorf("a chain verified against a CA since dropped from the bundle: %v; want it refused", err)
	}
}
