package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/phalanx-hpc/phalanx/internal/durable"
)

// DefaultDir is where daemons and phx look for the TLS files by default.
const DefaultDir = "/etc/phalanx/tls"

// File names in a TLS directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
	CRLFile    = "ca.crl"
)

// Kind is what a certificate is for.
type Kind int

const (
	KindController Kind = iota + 1
	KindNode
)

var kindNames = map[Kind]string{KindController: "controller", KindNode: "node"}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// ParseKind reads "controller" or "node".
func ParseKind(s string) (Kind, error) {
	for k, name := range kindNames {
		if s == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("certificate kind %q: write controller or node", s)
}

// CertFile and KeyFile are the names of a kind's certificate and key in a
// TLS directory.
func (k Kind) CertFile() string { return k.String() + ".crt" }
func (k Kind) KeyFile() string  { return k.String() + ".key" }

// uriScheme names the holder in a certificate: phalanx://KIND/NAME.
const uriScheme = "phalanx"

// Validity.
const (
	CALifespan      = 10 * 365 * 24 * time.Hour
	DefaultLifespan = 365 * 24 * time.Hour
	// clockSkew backdates a certificate so that a host whose clock is a
	// little behind the issuer's accepts it at once.
	clockSkew = 5 * time.Minute
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CheckName refuses a holder name that is no host name or replica ID.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("certificate name %q: use the node's name or the replica's ID (letters, digits, '.', '_', '-'; at most 63)", name)
	}
	return nil
}

// CA is a cluster CA that can issue certificates: its certificate and key.
type CA struct {
	Cert *x509.Certificate
	key  crypto.Signer
	dir  string
}

// InitCA makes a new CA in dir: ca.crt (mode 0644) and ca.key (0400). It
// refuses to replace an existing key.
func InitCA(dir string, now time.Time) (*CA, error) {
	keyPath := filepath.Join(dir, CAKeyFile)
	if _, err := os.Stat(keyPath); err == nil {
		return nil, fmt.Errorf("%s exists: this directory has a CA already (remove it first to start a new cluster CA)", keyPath)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	key, serial, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Phalanx cluster CA " + serial.Text(16)[:8], Organization: []string{"Phalanx"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CALifespan),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	cert, certPEM, keyPEM, err := create(tmpl, tmpl, key, key)
	if err != nil {
		return nil, err
	}
	if err := durable.WriteFile(keyPath, keyPEM, 0o400); err != nil {
		return nil, err
	}
	if err := durable.WriteFile(filepath.Join(dir, CACertFile), certPEM, 0o644); err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, dir: dir}, nil
}

// LoadCA reads the CA of dir to issue certificates. ca.key must be
// readable by its owner only. When ca.crt holds several CAs (during a
// rotation), the one ca.key belongs to issues.
func LoadCA(dir string) (*CA, error) {
	key, err := readKey(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("%w (create a CA with `phalanx-controller ca init --dir %s`)", err, dir)
	}
	certs, err := readCerts(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, err
	}
	for _, c := range certs {
		if publicKeyEqual(c.PublicKey, key.Public()) {
			return &CA{Cert: c, key: key, dir: dir}, nil
		}
	}
	return nil, fmt.Errorf("%s holds no certificate for the key %s", filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
}

// Issued is a new certificate and its key, PEM-encoded.
type Issued struct {
	Cert, Key []byte
	Leaf      *x509.Certificate
}

// Issue makes a certificate of kind for name, valid for lifespan from now.
// hosts (DNS names or IP addresses) are added as alternative names for
// tools that check them; Phalanx itself checks the kind and name.
func (ca *CA) Issue(kind Kind, name string, hosts []string, lifespan time.Duration, now time.Time) (*Issued, error) {
	if _, ok := kindNames[kind]; !ok {
		return nil, fmt.Errorf("certificate kind %v: write controller or node", kind)
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if lifespan <= 0 {
		return nil, fmt.Errorf("certificate lifespan %v: give a positive duration", lifespan)
	}
	for _, h := range hosts {
		if err := checkHost(h); err != nil {
			return nil, err
		}
	}
	notAfter := now.Add(lifespan)
	if notAfter.After(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("a certificate valid until %s would outlive the CA (valid until %s): give a shorter lifespan, or rotate the CA",
			notAfter.UTC().Format(time.DateOnly), ca.Cert.NotAfter.UTC().Format(time.DateOnly))
	}
	key, serial, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, OrganizationalUnit: []string{kind.String()}, Organization: []string{"Phalanx"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{{Scheme: uriScheme, Host: kind.String(), Path: "/" + name}},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	leaf, certPEM, keyPEM, err := create(tmpl, ca.Cert, key, ca.key)
	if err != nil {
		return nil, err
	}
	return &Issued{Cert: certPEM, Key: keyPEM, Leaf: leaf}, nil
}

// Write puts the certificate and key in dir under the kind's names
// (node.crt mode 0644, node.key mode 0400), each through a rename. A
// daemon that reloads between the two renames finds a key that does not
// match the certificate, refuses the pair and keeps what it had.
func (is *Issued) Write(dir string, kind Kind) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := durable.WriteFile(filepath.Join(dir, kind.KeyFile()), is.Key, 0o400); err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, kind.CertFile()), is.Cert, 0o644)
}

// IssueInto issues a certificate of kind for name and writes it, its key
// and the CA bundle (ca.crt) into dir: a TLS directory ready to copy to
// the holder's host.
func (ca *CA) IssueInto(dir string, kind Kind, name string, hosts []string, lifespan time.Duration, now time.Time) (*Issued, error) {
	is, err := ca.Issue(kind, name, hosts, lifespan, now)
	if err != nil {
		return nil, err
	}
	if err := is.Write(dir, kind); err != nil {
		return nil, err
	}
	if filepath.Clean(dir) == filepath.Clean(ca.dir) {
		return is, nil
	}
	bundle, err := os.ReadFile(filepath.Join(ca.dir, CACertFile))
	if err != nil {
		return nil, err
	}
	return is, durable.WriteFile(filepath.Join(dir, CACertFile), bundle, 0o644)
}

// ErrAlreadyRevoked is Revoke's answer for a serial already revoked.
var ErrAlreadyRevoked = errors.New("already revoked")

// Revoke adds the certificate with serial to the CA's revocation list,
// ca.crl in the CA's directory, and signs the list again. Daemons refuse
// the certificate once they have the new list (copy it beside ca.crt on
// every host, then SIGHUP). A serial already on the list is left as it
// is, and ErrAlreadyRevoked says so.
func (ca *CA) Revoke(serial *big.Int, now time.Time) error {
	path := filepath.Join(ca.dir, CRLFile)
	var entries []x509.RevocationListEntry
	number := big.NewInt(1)
	if data, err := os.ReadFile(path); err == nil {
		crl, err := parseCRL(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		entries = crl.RevokedCertificateEntries
		if crl.Number != nil {
			number.Add(crl.Number, big.NewInt(1))
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if e.SerialNumber.Cmp(serial) == 0 {
			return ErrAlreadyRevoked
		}
	}
	entries = append(entries, x509.RevocationListEntry{SerialNumber: serial, RevocationTime: now})
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		RevokedCertificateEntries: entries,
		Number:                    number,
		ThisUpdate:                now.Add(-clockSkew),
		NextUpdate:                ca.Cert.NotAfter,
	}, ca.Cert, ca.key)
	if err != nil {
		return err
	}
	return durable.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), 0o644)
}

// newKey makes the key of a new certificate (ECDSA P-256) and a random
// serial number for it.
func newKey() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return key, serial, err
}

// create signs tmpl, for key, by parent with signer (tmpl and key
// themselves for a CA), and returns the certificate, and it and the key
// PEM-encoded.
func create(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (*x509.Certificate, []byte, []byte, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, pemCert(der), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func publicKeyEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

// readKey reads a PEM private key that only its owner may read.
func readKey(path string) (crypto.Signer, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("private key %s: mode %04o lets other users read or change it: chmod 0400 %s", path, perm, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("private key %s: no PEM block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		if ec, err2 := x509.ParseECPrivateKey(block.Bytes); err2 == nil {
			return ec, nil
		}
		return nil, fmt.Errorf("private key %s: %w", path, err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key %s: %T cannot sign", path, k)
	}
	return s, nil
}

// readCerts reads every certificate of a PEM file.
func readCerts(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return out, nil
}

func parseCRL(data []byte) (*x509.RevocationList, error) {
	if block, _ := pem.Decode(data); block != nil {
		data = block.Bytes
	}
	return x509.ParseRevocationList(data)
}

// checkHost refuses a certificate host that is neither an IP address nor a
// DNS name (labels of letters, digits and inner hyphens; "*." first for a
// wildcard), so that no certificate carries a name no tool can match.
func checkHost(h string) error {
	if net.ParseIP(h) != nil {
		return nil
	}
	bad := fmt.Errorf("host %q is neither an IP address nor a DNS name: give names like gpu007.example or addresses like 10.0.0.7", h)
	name := strings.TrimPrefix(h, "*.")
	if name == "" || len(name) > 253 {
		return bad
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return bad
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return bad
			}
		}
	}
	return nil
}
