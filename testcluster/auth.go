package testcluster

import (
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cli"
	"github.com/phalanx-hpc/phalanx/internal/cliwire"
	"github.com/phalanx-hpc/phalanx/pki"
)

// Test clusters run secured, as a real one does: a cluster key and a CA
// in their directory, every client call signed with the key and made over
// TLS, every replica and agent with a certificate of its own.

// Root is the identity of a test's own calls: an administrator.
var Root = auth.Identity{User: "root", UID: 0, GID: 0, Kind: auth.KindLocal}

// Secrets are a test cluster's cluster key and CA.
type Secrets struct {
	Key     auth.Key
	KeyFile string // the cluster key, given to every replica
	CA      *pki.CA
	CACert  string // the CA's certificate, for clients ($PHX_CA_CERT)
	dir     string // the CA's directory; issued certificates go below
	trust   *pki.Material
}

// NewSecrets writes a cluster key and makes a CA in dir (a test cluster
// makes its own; a test makes another to play a stranger).
func NewSecrets(t testing.TB, dir string) Secrets {
	t.Helper()
	s := Secrets{KeyFile: filepath.Join(dir, "auth.key"), dir: filepath.Join(dir, "tls")}
	var err error
	if s.Key, err = auth.WriteNewKey(s.KeyFile); err != nil {
		t.Fatal(err)
	}
	if s.CA, err = pki.InitCA(s.dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	s.CACert = filepath.Join(s.dir, pki.CACertFile)
	if s.trust, err = pki.Load(pki.TrustFiles(s.CACert)); err != nil {
		t.Fatal(err)
	}
	return s
}

// CertDir is the TLS directory Issue writes kind's certificate for name
// into.
func (s *Secrets) CertDir(kind pki.Kind, name string) string {
	return filepath.Join(s.dir, kind.String()+"-"+name)
}

// Issue writes a certificate of kind for name, with the CA's, into a TLS
// directory of its own (a daemon's --tls-dir; the same one each time, as
// a renewal) and returns it.
func (s *Secrets) Issue(t testing.TB, kind pki.Kind, name string) string {
	t.Helper()
	dir := s.CertDir(kind, name)
	if _, err := s.CA.IssueInto(dir, kind, name, nil, time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Material issues a certificate of kind for name and loads it.
func (s *Secrets) Material(t testing.TB, kind pki.Kind, name string) *pki.Material {
	t.Helper()
	m, err := pki.Load(pki.DirFiles(s.Issue(t, kind, name), kind))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Revoke revokes the certificate with serial and copies the new
// revocation list beside ca.crt in every TLS directory issued, as an
// admin copies it to every host. Daemons use it once they reload.
func (s *Secrets) Revoke(t testing.TB, serial *big.Int) {
	t.Helper()
	if err := s.CA.Revoke(serial, time.Now()); err != nil {
		t.Fatal(err)
	}
	crl, err := os.ReadFile(filepath.Join(s.dir, pki.CRLFile))
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := filepath.Glob(filepath.Join(s.dir, "*", pki.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, ca := range dirs {
		if err := os.WriteFile(filepath.Join(filepath.Dir(ca), pki.CRLFile), crl, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ReloadTLS makes every running replica read its TLS files again, as
// SIGHUP does for a replica process.
func (c *Cluster) ReloadTLS() {
	c.t.Helper()
	for _, r := range c.replicas {
		if r.tls != nil {
			if err := r.tls.Reload(); err != nil {
				c.t.Fatalf("reload %s's TLS files: %v", r.id, err)
			}
		}
	}
}

// Transport is TLS to the controllers, trusting the cluster's CA and
// presenting m's certificate (none when m is nil, as phx).
func (s *Secrets) Transport(m *pki.Material) grpc.DialOption {
	if m == nil {
		m = s.trust
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(m.ClientConfig()))
}

// DialAs connects to the controllers at addrs over TLS with credentials
// for id, signed with the cluster key.
func (s *Secrets) DialAs(addrs []string, id auth.Identity) (*apiclient.Conn, error) {
	return apiclient.Dial(addrs, apiclient.WithDialOptions(s.Transport(nil), grpc.WithPerRPCCredentials(auth.Issuer(auth.Ring(s.Key), id, time.Hour))))
}

// Dial connects to the controllers at addrs (default: every replica) as
// Root.
func (c *Procs) Dial(addrs ...string) (*apiclient.Conn, error) {
	if len(addrs) == 0 {
		addrs = c.APIAddrs()
	}
	return c.DialAs(addrs, Root)
}

// ClientAs returns a client of the cluster that calls as id; it is closed
// with the cluster.
func (c *Cluster) ClientAs(id auth.Identity) phalanxv1.ControllerServiceClient {
	c.t.Helper()
	conn, err := c.DialAs(c.APIAddrs(), id)
	if err != nil {
		c.t.Fatalf("dial controllers as %s: %v", id, err)
	}
	c.t.Cleanup(func() { conn.Close() })
	return phalanxv1.NewControllerServiceClient(conn)
}

// serveAuth serves the cluster's auth socket, as a node's daemon does,
// until the test ends.
func (c *Cluster) serveAuth() {
	c.t.Helper()
	c.AuthSocket = filepath.Join(c.Dir, "auth.sock")
	l, err := auth.Listen(c.AuthSocket)
	if err != nil {
		c.t.Fatalf("auth socket: %v", err)
	}
	c.t.Cleanup(func() { l.Close() })
	go (&auth.Server{Keys: auth.Ring(c.Key), Log: c.logger("auth")}).Serve(l)
}

// serveCLI runs the CLI server beside the auth socket, as a node's daemon
// does: phx run with PHX_AUTH_SOCKET=AuthSocket has it run sbatch, squeue,
// sinfo, scancel and sacct (PHX_CLI_SOCKET=none makes phx run them itself).
func (c *Cluster) serveCLI() {
	c.t.Helper()
	srv, err := cli.NewServer(c.APIAddrs(), c.CACert, false, auth.Ring(c.Key), c.logger("cli"))
	if err != nil {
		c.t.Fatalf("CLI server: %v", err)
	}
	stop, err := cli.ServeCLI(filepath.Join(filepath.Dir(c.AuthSocket), cliwire.SocketName), srv)
	if err != nil {
		c.t.Fatalf("CLI server: %v", err)
	}
	c.t.Cleanup(stop)
}
