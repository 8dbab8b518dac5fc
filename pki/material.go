package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Files are the paths a daemon or client reads. CRL is optional (a
// missing file revokes nothing); Cert and Key are empty for a client that
// only checks the controllers' certificates (phx).
type Files struct {
	CA, CRL, Cert, Key string
}

// DirFiles are the files of kind in dir: ca.crt, ca.crl, KIND.crt,
// KIND.key.
func DirFiles(dir string, kind Kind) Files {
	return Files{
		CA:   filepath.Join(dir, CACertFile),
		CRL:  filepath.Join(dir, CRLFile),
		Cert: filepath.Join(dir, kind.CertFile()),
		Key:  filepath.Join(dir, kind.KeyFile()),
	}
}

// TrustFiles are the files of a client with no certificate of its own:
// the CA bundle at caFile and the revocation list beside it.
func TrustFiles(caFile string) Files {
	return Files{CA: caFile, CRL: filepath.Join(filepath.Dir(caFile), CRLFile)}
}

// Peer is who a certificate names.
type Peer struct {
	Kind   Kind
	Name   string
	Serial string // hexadecimal
}

func (p Peer) String() string { return p.Kind.String() + " " + p.Name }

// Errors a refusal wraps.
var (
	ErrExpired   = errors.New("certificate expired")
	ErrRevoked   = errors.New("certificate revoked")
	ErrUntrusted = errors.New("certificate not from this cluster's CA")
	ErrWrongKind = errors.New("certificate of the wrong kind")
)

// Material is a daemon's TLS files, loaded, and reloadable while
// connections use them.
type Material struct {
	files Files
	now   func() time.Time
	cur   atomic.Pointer[loaded]

	mu       sync.Mutex
	reloaded []func() // called after each reload ReloadOn makes
}

type loaded struct {
	roots   *x509.CertPool
	cas     []*x509.Certificate
	revoked map[string]bool // serials, hexadecimal
	cert    *tls.Certificate
	self    Peer
	// verified: the chains whose signatures checked out against roots.
	verified verifiedChains
}

// Load reads files. With Cert and Key, the certificate must be from a CA
// of the bundle, valid now and not revoked: a daemon does not start with
// a certificate its peers would refuse.
func Load(files Files) (*Material, error) {
	m := &Material{files: files, now: time.Now}
	if err := m.Reload(); err != nil {
		return nil, err
	}
	return m, nil
}

// Reload reads the files again. When one fails the checks, the material
// keeps what it had and the error says why.
func (m *Material) Reload() error {
	l, err := m.load()
	if err != nil {
		return err
	}
	m.cur.Store(l)
	return nil
}

func (m *Material) load() (*loaded, error) {
	cas, err := readCerts(m.files.CA)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	l := &loaded{roots: x509.NewCertPool(), cas: cas, revoked: map[string]bool{}}
	for _, c := range cas {
		l.roots.AddCert(c)
	}
	if m.files.CRL != "" {
		if err := l.readCRL(m.files.CRL, m.files.CA); err != nil {
			return nil, err
		}
	}
	if m.files.Cert == "" {
		return l, nil
	}
	if _, err := readKey(m.files.Key); err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(m.files.Cert, m.files.Key)
	if err != nil {
		return nil, fmt.Errorf("certificate %s with key %s: %w", m.files.Cert, m.files.Key, err)
	}
	l.self, err = l.verify(cert.Leaf, nil, 0, m.now())
	if err != nil {
		return nil, fmt.Errorf("own certificate %s: %w", m.files.Cert, err)
	}
	l.cert = &cert
	return l, nil
}

func (l *loaded) readCRL(path, caFile string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	crl, err := parseCRL(data)
	if err != nil {
		return fmt.Errorf("revocation list %s: %w", path, err)
	}
	signed := false
	for _, ca := range l.cas {
		if crl.CheckSignatureFrom(ca) == nil {
			signed = true
		}
	}
	if !signed {
		return fmt.Errorf("revocation list %s is not signed by a CA of %s", path, caFile)
	}
	for _, e := range crl.RevokedCertificateEntries {
		l.revoked[e.SerialNumber.Text(16)] = true
	}
	return nil
}

// Self is who the material's own certificate names (zero without one).
func (m *Material) Self() Peer { return m.cur.Load().self }

// Serial is the own certificate's serial number (nil without one).
func (m *Material) Serial() *big.Int {
	if c := m.cur.Load().cert; c != nil {
		return c.Leaf.SerialNumber
	}
	return nil
}

// NotAfter is when the own certificate expires (zero without one).
func (m *Material) NotAfter() time.Time {
	if c := m.cur.Load().cert; c != nil {
		return c.Leaf.NotAfter
	}
	return time.Time{}
}

// Check verifies a peer's certificate chain (leaf first) now, against the
// current CA bundle and revocation list, and that it is of kind want (0:
// any kind). A connection's certificate is checked at its handshake, and
// again by each call that relies on it, so that a certificate revoked or
// expired since is refused on connections made before.
func (m *Material) Check(chain []*x509.Certificate, want Kind) (Peer, error) {
	if len(chain) == 0 {
		return Peer{}, errors.New("no certificate presented")
	}
	return m.cur.Load().verify(chain[0], chain[1:], want, m.now())
}

func (l *loaded) verify(leaf *x509.Certificate, inter []*x509.Certificate, want Kind, now time.Time) (Peer, error) {
	p, err := peerOf(leaf)
	if err != nil {
		return Peer{}, err
	}
	switch {
	case now.After(leaf.NotAfter):
		return p, fmt.Errorf("%w: the %s's certificate (serial %s) expired at %s: issue a new one with `phalanx-controller ca issue %s %s`",
			ErrExpired, p, p.Serial, leaf.NotAfter.UTC().Format(time.RFC3339), p.Kind, p.Name)
	case now.Before(leaf.NotBefore):
		return p, fmt.Errorf("%w: the %s's certificate (serial %s) is valid only from %s: check the clocks", ErrExpired, p, p.Serial, leaf.NotBefore.UTC().Format(time.RFC3339))
	case l.revoked[p.Serial]:
		return p, fmt.Errorf("%w: the %s's certificate (serial %s) is on the revocation list", ErrRevoked, p, p.Serial)
	case want != 0 && p.Kind != want:
		return p, fmt.Errorf("%w: a %s's certificate (%s) where a %s's is needed", ErrWrongKind, p.Kind, p.Name, want)
	}
	if err := l.verified.verify(leaf, inter, l.roots, now); err != nil {
		return p, fmt.Errorf("%w: the %s's certificate (issued by %q): %v", ErrUntrusted, p, leaf.Issuer.CommonName, err)
	}
	return p, nil
}

// peerOf reads the holder a certificate names: its phalanx:// URI, which
// must agree with its Common Name.
func peerOf(c *x509.Certificate) (Peer, error) {
	p := Peer{Name: c.Subject.CommonName, Serial: c.SerialNumber.Text(16)}
	for _, u := range c.URIs {
		if u.Scheme != uriScheme {
			continue
		}
		k, err := ParseKind(u.Host)
		if err != nil || strings.TrimPrefix(u.Path, "/") != p.Name {
			return p, fmt.Errorf("%w: certificate %q (serial %s) names %s", ErrUntrusted, p.Name, p.Serial, u)
		}
		p.Kind = k
		return p, nil
	}
	return p, fmt.Errorf("%w: certificate %q (serial %s) is no Phalanx certificate (no phalanx:// name)", ErrUntrusted, p.Name, p.Serial)
}

// ServerConfig is the TLS of a server with the material's certificate.
// Peers must present a certificate of kind requireKind, or, with
// requireKind 0, may present one of any kind (the controller API: users
// come with credentials and no certificate). What a peer presents is
// checked as Check does; a refusal is logged to log (when not nil) with
// the peer's address and the reason, which the peer itself only sees as
// a TLS alert.
func (m *Material) ServerConfig(requireKind Kind, log *slog.Logger) *tls.Config {
	clientAuth := tls.RequestClientCert
	if requireKind != 0 {
		clientAuth = tls.RequireAnyClientCert
	}
	base := &tls.Config{
		MinVersion: tls.VersionTLS13,
		ClientAuth: clientAuth,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := m.cur.Load().cert; c != nil {
				return c, nil
			}
			return nil, errors.New("no server certificate")
		},
	}
	verify := func(remote net.Addr) func(tls.ConnectionState) error {
		return func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return nil // RequireAnyClientCert already refused it when required
			}
			_, err := m.Check(cs.PeerCertificates, requireKind)
			if err != nil && log != nil {
				log.Warn("TLS: refused a connection", "from", remote, "err", err)
			}
			return err
		}
	}
	cfg := base.Clone()
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		var remote net.Addr
		if hello.Conn != nil {
			remote = hello.Conn.RemoteAddr()
		}
		c.VerifyConnection = verify(remote)
		return c, nil
	}
	cfg.VerifyConnection = verify(nil)
	return cfg
}

// ClientConfig is the TLS of a client of a controller: the server must
// present a controller's certificate; the client presents the material's
// own, when it has one.
func (m *Material) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// Go's verification checks a host name; this package checks the
		// chain, the kind and the revocation list itself, in
		// VerifyConnection.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if c := m.cur.Load().cert; c != nil {
				return c, nil
			}
			return &tls.Certificate{}, nil // none: the server decides
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := m.Check(cs.PeerCertificates, KindController)
			return err
		},
	}
}

// OnReload registers f to run after each reload that ReloadOn makes (a
// client drops its connections, so that new ones present the new
// certificate: those made before keep the one they were made with).
func (m *Material) OnReload(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reloaded = append(m.reloaded, f)
}

// expiryCheck is how often ReloadOn looks whether the own certificate
// expires soon, for a daemon that runs for months without a reload.
const expiryCheck = 12 * time.Hour

// ReloadOn reloads the material each time ch delivers (a daemon passes its
// SIGHUP channel), logging what it now holds or why it kept the old, and
// warns twice a day while the own certificate expires within
// ExpiryWarning.
func (m *Material) ReloadOn(ch <-chan os.Signal, log *slog.Logger) {
	go func() {
		tick := time.NewTicker(expiryCheck)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				m.warnExpiry(log)
				continue
			case _, ok := <-ch:
				if !ok {
					return
				}
			}
			if err := m.Reload(); err != nil {
				log.Error("TLS files not reloaded; the previous ones stay in use", "err", err)
				continue
			}
			m.LogLoaded(log)
			m.mu.Lock()
			fs := append([]func(){}, m.reloaded...)
			m.mu.Unlock()
			for _, f := range fs {
				f()
			}
		}
	}()
}

// ExpiryWarning is how long before its own certificate expires a daemon
// starts warning.
const ExpiryWarning = 30 * 24 * time.Hour

// LogLoaded logs what the material holds, with a warning when the own
// certificate expires soon.
func (m *Material) LogLoaded(log *slog.Logger) {
	l := m.cur.Load()
	if l.cert == nil {
		log.Info("TLS files loaded", "cas", len(l.cas), "revoked", len(l.revoked))
		return
	}
	log.Info("TLS files loaded", "certificate", l.self.String(), "serial", l.self.Serial,
		"expires", l.cert.Leaf.NotAfter.UTC().Format(time.RFC3339), "cas", len(l.cas), "revoked", len(l.revoked))
	m.warnExpiry(log)
}

// warnExpiry logs a warning when the own certificate expires within
// ExpiryWarning (an error once it has).
func (m *Material) warnExpiry(log *slog.Logger) {
	l := m.cur.Load()
	if l.cert == nil {
		return
	}
	left := l.cert.Leaf.NotAfter.Sub(m.now())
	cmd := fmt.Sprintf("phalanx-controller ca issue %s %s", l.self.Kind, l.self.Name)
	switch {
	case left <= 0:
		log.Error("own certificate has expired: peers refuse it; issue a new one and send SIGHUP", "certificate", l.self.String(), "command", cmd)
	case left < ExpiryWarning:
		log.Warn("own certificate expires soon: issue a new one and send SIGHUP", "certificate", l.self.String(),
			"expires_in", left.Round(time.Hour).String(), "command", cmd)
	}
}
