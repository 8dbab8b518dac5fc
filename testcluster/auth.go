package testcluster

import (
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
)

// Test clusters run secured, as a real one does: a cluster key in their
// directory, every client call signed with it.

// Root is the identity of a test's own calls: an administrator.
var Root = auth.Identity{User: "root", UID: 0, GID: 0, Kind: auth.KindLocal}

// newKey writes a cluster key into dir.
func newKey(t testing.TB, dir string) (auth.Key, string) {
	t.Helper()
	path := filepath.Join(dir, "auth.key")
	k, err := auth.WriteNewKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return k, path
}

// DialAs connects to the controllers at addrs with credentials for id,
// signed with k.
func DialAs(addrs []string, k auth.Key, id auth.Identity) (*apiclient.Conn, error) {
	return apiclient.Dial(addrs, apiclient.WithDialOptions(grpc.WithPerRPCCredentials(auth.Issuer(auth.Ring(k), id, time.Hour))))
}

// Dial connects to the controllers at addrs (default: every replica) as
// Root.
func (c *Procs) Dial(addrs ...string) (*apiclient.Conn, error) {
	if len(addrs) == 0 {
		addrs = c.APIAddrs()
	}
	return DialAs(addrs, c.Key, Root)
}

// ClientAs returns a client of the cluster that calls as id; it is closed
// with the cluster.
func (c *Cluster) ClientAs(id auth.Identity) phalanxv1.ControllerServiceClient {
	c.t.Helper()
	conn, err := DialAs(c.APIAddrs(), c.Key, id)
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
