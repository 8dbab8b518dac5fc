package devcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/grpc"

	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
)

// A dev cluster is secured as a real one: its own cluster key in Dir
// (made on first start, kept when it resumes), given to every controller,
// and an auth socket in Dir served by the dev process itself, which phx
// finds through $PHX_AUTH_SOCKET.

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
	stop, err := auth.ServeSocket(c.AuthSocket(), auth.Ring(k), nil)
	if err != nil {
		return err
	}
	c.stopAuth = stop
	return nil
}

// dial connects to the controllers with a credential from the cluster's
// own auth socket, as phx does.
func (c *Cluster) dial() (*apiclient.Conn, error) {
	return apiclient.Dial(c.APIAddrs(), apiclient.WithDialOptions(grpc.WithPerRPCCredentials(auth.Socket(c.AuthSocket()))))
}
