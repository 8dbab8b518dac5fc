package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/pki"
)

const caUsage = `usage:
  phalanx-controller ca init [--dir DIR]
      make the cluster CA: DIR/ca.crt (for every host) and DIR/ca.key (keep it here, mode 0400)
  phalanx-controller ca issue controller|node NAME [--dir DIR] [--out OUT] [--days N] [--hosts H,...]
      a certificate for replica or node NAME, with ca.crt beside it, in OUT (default DIR/issued/NAME):
      copy OUT's files to NAME's /etc/phalanx/tls
  phalanx-controller ca revoke CERT.crt|--serial HEX [--dir DIR]
      add a certificate to DIR/ca.crl; copy ca.crl beside ca.crt on every host, then SIGHUP
DIR defaults to ` + pki.DefaultDir + "\n"

// caCommand runs `phalanx-controller ca ...` and returns the exit code.
func caCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, caUsage)
		return 2
	}
	var err error
	switch args[0] {
	case "init":
		err = caInit(args[1:], stdout)
	case "issue":
		err = caIssue(args[1:], stdout)
	case "revoke":
		err = caRevoke(args[1:], stdout)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, caUsage)
		return 0
	default:
		err = fmt.Errorf("unknown ca command %q: write init, issue or revoke", args[0])
	}
	var usage usageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "phalanx-controller ca: %v (phalanx-controller ca --help shows the usage)\n", err)
		return 2
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, caUsage)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "phalanx-controller ca: %v\n", err)
		return 1
	}
	return 0
}

// usageError is a command line that makes no sense.
type usageError struct{ error }

// caFlags parses the flags of a ca command; the positional arguments may
// come before or after them.
func caFlags(name string, args []string, define func(fs *flag.FlagSet)) (dir string, pos []string, err error) {
	fs := flag.NewFlagSet("ca "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&dir, "dir", pki.DefaultDir, "the CA's directory")
	if define != nil {
		define(fs)
	}
	for len(args) > 0 {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return "", nil, err
		} else if err != nil {
			return "", nil, usageError{err}
		}
		args = fs.Args()
		if len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	return dir, pos, nil
}

func caInit(args []string, stdout io.Writer) error {
	dir, pos, err := caFlags("init", args, nil)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Errorf("ca init takes no arguments (got %q)", pos)}
	}
	ca, err := pki.InitCA(dir, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "made the cluster CA %q, valid until %s:\n  %s  copy to every host and client\n  %s  keep here only (mode 0400)\n",
		ca.Cert.Subject.CommonName, ca.Cert.NotAfter.UTC().Format(time.DateOnly),
		filepath.Join(dir, pki.CACertFile), filepath.Join(dir, pki.CAKeyFile))
	return nil
}

func caIssue(args []string, stdout io.Writer) error {
	var out, hosts string
	var days int
	dir, pos, err := caFlags("issue", args, func(fs *flag.FlagSet) {
		fs.StringVar(&out, "out", "", "where to write the certificate")
		fs.IntVar(&days, "days", int(pki.DefaultLifespan/(24*time.Hour)), "validity in days")
		fs.StringVar(&hosts, "hosts", "", "host names and addresses to add to the certificate")
	})
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError{errors.New("ca issue needs a kind (controller or node) and a name")}
	}
	kind, err := pki.ParseKind(pos[0])
	if err != nil {
		return usageError{err}
	}
	if days <= 0 {
		return usageError{fmt.Errorf("--days %d: give a positive number of days", days)}
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(dir, "issued", pos[1])
	}
	is, err := ca.IssueInto(out, kind, pos[1], apiclient.SplitAddrs(hosts), time.Duration(days)*24*time.Hour, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "issued a %s certificate for %s (serial %s), valid until %s, in %s:\n  %s %s %s\ncopy them to %s's %s (the key stays mode 0400)\n",
		kind, pos[1], is.Leaf.SerialNumber.Text(16), is.Leaf.NotAfter.UTC().Format(time.DateOnly), out,
		kind.CertFile(), kind.KeyFile(), pki.CACertFile, pos[1], pki.DefaultDir)
	return nil
}

func caRevoke(args []string, stdout io.Writer) error {
	var serialHex string
	dir, pos, err := caFlags("revoke", args, func(fs *flag.FlagSet) {
		fs.StringVar(&serialHex, "serial", "", "serial number (hexadecimal) of the certificate to revoke")
	})
	if err != nil {
		return err
	}
	var serial *big.Int
	var cert *x509.Certificate
	switch {
	case serialHex != "" && len(pos) == 0:
		var ok bool
		if serial, ok = new(big.Int).SetString(strings.TrimPrefix(serialHex, "0x"), 16); !ok {
			return usageError{fmt.Errorf("--serial %q: want the hexadecimal serial number `ca issue` printed", serialHex)}
		}
	case serialHex == "" && len(pos) == 1:
		if cert, err = readCertFile(pos[0]); err != nil {
			return err
		}
		serial = cert.SerialNumber
	default:
		return usageError{errors.New("ca revoke needs a certificate file or --serial HEX")}
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		return err
	}
	if serial.Cmp(ca.Cert.SerialNumber) == 0 || (cert != nil && cert.IsCA) {
		// Daemons look up a peer's own serial on the list, never its CA's.
		return fmt.Errorf("serial %s is a CA's own certificate, not one it issued: a revocation list cannot revoke a CA; rotate the CA instead (docs/security.md, Rotating the CA)", serial.Text(16))
	}
	if cert != nil && cert.CheckSignatureFrom(ca.Cert) != nil {
		return fmt.Errorf("%s was not issued by the CA in %s: its serial on this CA's list would not stop it; revoke it with the CA that issued it", pos[0], dir)
	}
	if err := ca.Revoke(serial, time.Now()); errors.Is(err, pki.ErrAlreadyRevoked) {
		fmt.Fprintf(stdout, "serial %s is already revoked in %s: nothing changed\n", serial.Text(16), filepath.Join(dir, pki.CRLFile))
		return nil
	} else if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked serial %s in %s: copy it beside ca.crt on every host, then `pkill -HUP -f 'phalanx-(controller|agent)'`\n",
		serial.Text(16), filepath.Join(dir, pki.CRLFile))
	return nil
}

func readCertFile(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

// loadTLS loads the TLS files of a daemon of kind, and says how to make
// them when they are missing. Files that are there but fail the checks
// (a key others may read, an expired certificate) get only what the
// check says: making a CA would not fix them.
func loadTLS(dir string, kind pki.Kind, name string) (*pki.Material, error) {
	m, err := pki.Load(pki.DirFiles(dir, kind))
	if errors.Is(err, os.ErrNotExist) {
		if name == "" {
			name = "NAME"
		}
		return nil, fmt.Errorf("TLS: %w (make the cluster CA once with `phalanx-controller ca init`, then this %s's certificate with `phalanx-controller ca issue %s %s --out %s`; or --insecure, for debugging only)",
			err, kind, kind, name, dir)
	} else if err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	if self := m.Self(); self.Kind != kind {
		return nil, fmt.Errorf("TLS: %s holds a %s's certificate (%s): a %s needs its own, from `phalanx-controller ca issue %s`", dir, self.Kind, self.Name, kind, kind)
	}
	return m, nil
}
