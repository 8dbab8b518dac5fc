package devcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cli"
	"github.com/phalanx-hpc/phalanx/internal/cliwire"
	"github.com/phalanx-hpc/phalanx/pki"
)

// A dev cluster is secured as a real one: its own cluster key in Dir
// (made on first start, kept when it resumes), given to every controller,
// and an auth socket in Dir served by the dev process itself, which phx
// finds through $PHX_AUTH_SOCKET; its own CA in Dir/tls (kept too), with a
// certificate for each controller and each node in Dir/tls/NAME, issued
// at each start; phx trusts the CA through $PHX_CA_CERT.

func (c *Cluster) keyFile() string { return filepath.Join(c.Dir, "auth.key") }

// AuthSocket is the socket that gives local users their credentials.
func (c *Cluster) AuthSocket() string { return filepath.Join(c.Dir, "auth.sock") }

// serveAuth loads or makes the cluster key and serves the auth socket.
func (c *Cluster) serveAuth() error {
	k, err := auth.LoadKey(c.keyFile())
	if errors.Is(err, os.ErrNotExist) {
		k, err = auth.WriteNewKey(c.keyFile())
	}
	if err != nil {
		return fmt.Errorf("dev cluster key: %w", err)
	}
	c.keys = auth.Ring(k)
	stop, err := auth.ServeSocket(c.AuthSocket(), c.keys, nil)
	if err != nil {
		return err
	}
	c.stopAuth = stop
	return nil
}

// CLISocket is where the dev process runs phx's served commands
// (sbatch, squeue, sinfo, scancel, sacct) for local users: cli.sock beside the
// auth socket, where phx looks for it.
func (c *Cluster) CLISocket() string { return filepath.Join(c.Dir, cliwire.SocketName) }

// serveCLI runs the CLI server on CLISocket, on one connection to the
// controllers over TLS, as a node agent does.
func (c *Cluster) serveCLI() error {
	srv, err := cli.NewServer(c.APIAddrs(), c.CACert(), false, c.keys, nil)
	if err != nil {
		return err
	}
	stop, err := cli.ServeCLI(c.CLISocket(), srv)
	if err != nil {
		srv.Conn.Close()
		return err
	}
	c.stopCLI = stop
	return nil
}

// CACert is the cluster CA's certificate, for $PHX_CA_CERT.
func (c *Cluster) CACert() string { return filepath.Join(c.tlsDir(), pki.CACertFile) }

func (c *Cluster) tlsDir() string { return filepath.Join(c.Dir, "tls") }

// componentTLS is the TLS directory of a controller or node.
func (c *Cluster) componentTLS(name string) string { return filepath.Join(c.tlsDir(), name) }

// provisionTLS loads or makes the CA and issues every component's
// certificate.
func (c *Cluster) provisionTLS() error {
	ca, err := pki.LoadCA(c.tlsDir())
	if errors.Is(err, os.ErrNotExist) {
		ca, err = pki.InitCA(c.tlsDir(), time.Now())
	}
	if err != nil {
		return fmt.Errorf("dev cluster CA: %w", err)
	}
	for _, r := range c.Layout.Controllers {
		if _, err := ca.IssueInto(c.componentTLS(r.ID), pki.KindController, r.ID, nil, pki.DefaultLifespan, time.Now()); err != nil {
			return err
		}
	}
	for _, n := range c.Layout.Nodes {
		if _, err := ca.IssueInto(c.componentTLS(n), pki.KindNode, n, nil, pki.DefaultLifespan, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

// dial connects to the controllers with a credential from the cluster's
// own auth socket, over TLS, as phx does.
func (c *Cluster) dial() (*apiclient.Conn, error) {
	m, err := pki.Load(pki.TrustFiles(c.CACert()))
	if err != nil {
		return nil, err
	}
	return apiclient.Dial(c.APIAddrs(), apiclient.WithDialOptions(
		grpc.WithTransportCredentials(credentials.NewTLS(m.ClientConfig())),
		grpc.WithPerRPCCredentials(auth.Socket(c.AuthSocket()))))
}
