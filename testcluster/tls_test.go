package testcluster_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// Certificates change under running controller processes: a renewed
// certificate is served after SIGHUP, with no restart and no failed call;
// a revoked node certificate is refused after SIGHUP, on the connection
// it had already made too, with a message that says so.
func TestCertificatesChangeWithoutRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs phalanx-controller processes; not in -short")
	}
	procs := testcluster.StartProcs(t, testcluster.BuildController(t, t.TempDir()), testcluster.ProcOptions{Replicas: 1})
	api := procs.Replicas[0].API
	before := servedSerial(t, api)

	// Renewal.
	procs.Issue(t, pki.KindController, procs.Replicas[0].ID)
	procs.Hangup(0)
	testcluster.Eventually(t, 10*time.Second, func() error {
		if s := servedSerial(t, api); s.Cmp(before) == 0 {
			return fmt.Errorf("still serving serial %x", s)
		}
		return nil
	})
	conn, err := procs.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := phalanxv1.NewControllerServiceClient(conn).ListJobs(context.Background(), &phalanxv1.ListJobsRequest{}); err != nil {
		t.Fatalf("a call after the renewal: %v", err)
	}

	// Revocation.
	node := procs.Material(t, pki.KindNode, "gpu042")
	nconn, err := apiclient.Dial(procs.APIAddrs(), apiclient.WithDialOptions(procs.Transport(node)))
	if err != nil {
		t.Fatal(err)
	}
	defer nconn.Close()
	nodes := phalanxv1.NewNodeServiceClient(nconn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := nodes.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "gpu042", Addr: "127.0.0.1", Gpus: 8, Cpus: 64, MemoryMb: 1024}); err != nil {
		t.Fatalf("register with the node's certificate: %v", err)
	}
	procs.Revoke(t, node.Serial())
	procs.Hangup(0)
	testcluster.Eventually(t, 10*time.Second, func() error {
		_, err := nodes.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "gpu042"})
		if status.Code(err) != codes.Unauthenticated {
			return fmt.Errorf("heartbeat on the connection made before the revocation: %v", err)
		}
		if !strings.Contains(err.Error(), "revocation list") {
			t.Fatalf("the refusal says %v; want the revocation list named", err)
		}
		return nil
	})
}

// servedSerial is the serial of the certificate the server at addr
// presents.
func servedSerial(t *testing.T, addr string) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// An agent whose certificate is revoked stops being heard (its heartbeats
// are refused, on the connection it had too) and the node goes DOWN; once
// it has a new certificate and reloads (SIGHUP), it reconnects with it and
// the node comes back, with no restart of anything.
func TestAgentReconnectsWithRenewedCertificate(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake"})
	node := c.Nodes[0]
	nodeState := func(want string) func() error {
		return func() error {
			list, err := c.Client.ListNodes(context.Background(), &phalanxv1.ListNodesRequest{Names: []string{node}})
			if err != nil {
				return err
			}
			if len(list.Nodes) != 1 || list.Nodes[0].State != want {
				return fmt.Errorf("node %s: %v; want %s", node, list.Nodes, want)
			}
			return nil
		}
	}
	agentDir := c.CertDir(pki.KindNode, node)
	held, err := pki.Load(pki.DirFiles(agentDir, pki.KindNode))
	if err != nil {
		t.Fatal(err)
	}
	c.Revoke(t, held.Serial())
	c.ReloadTLS()
	testcluster.Eventually(t, 15*time.Second, nodeState("DOWN"))

	c.Issue(t, pki.KindNode, node) // a new certificate where the agent reads it
	c.HangupAgent(node)
	testcluster.Eventually(t, 15*time.Second, nodeState("IDLE"))
}

// phx says why it cannot talk to the controllers when TLS is the reason:
// a CA that is not the cluster's, or plaintext to a controller with TLS;
// and a missing CA file stops it before it calls at all.
func TestPhxSaysWhyTLSFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds phx; not in -short")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake"})
	root := auth.Identity{User: "root"}
	dir := t.TempDir()
	other := testcluster.NewSecrets(t, t.TempDir())
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"PHX_CA_CERT=" + other.CACert}, "TLS with the controller at"},
		{[]string{"PHX_CA_CERT=" + other.CACert}, "certificate not from this cluster's CA"},
		{[]string{"PHX_INSECURE=1"}, "PHX_INSECURE is set"},
		{[]string{"PHX_CA_CERT=" + dir + "/none.crt"}, "set PHX_CA_CERT to the cluster's ca.crt"},
	} {
		code, _, errOut := phxAs(t, c, root, dir, tc.env, "--timeout", "5s", "squeue")
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("phx squeue with %v: exit %d, %q; want an error saying %q", tc.env, code, errOut, tc.want)
		}
	}
}

// A follower forwards a node's calls to the leader on a connection of its
// own, made with its controller certificate. Once its certificate is
// renewed and the old one revoked (or the CA rotated), SIGHUP must make
// it connect again with the new one: the leader checks the forwarding
// replica's certificate on every node call, and refused each one on the
// connection made before, so an agent that reached that follower could
// not register (its node went DOWN).
func TestFollowerForwardsWithRenewedCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs phalanx-controller processes; not in -short")
	}
	procs := testcluster.StartProcs(t, testcluster.BuildController(t, t.TempDir()), testcluster.ProcOptions{Replicas: 3})
	leader, err := procs.WaitLeader(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f := (leader + 1) % len(procs.Replicas)
	follower := procs.Replicas[f]
	dial := func(addr, node string) (phalanxv1.NodeServiceClient, *pki.Material) {
		m := procs.Material(t, pki.KindNode, node)
		conn, err := grpc.NewClient(addr, procs.Transport(m))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return phalanxv1.NewNodeServiceClient(conn), m
	}
	viaFollower, _ := dial(follower.API, "gpu043")
	probe, probeCert := dial(procs.Replicas[leader].API, "gpu044") // says when the leader has reloaded
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for node, api := range map[string]phalanxv1.NodeServiceClient{"gpu043": viaFollower, "gpu044": probe} {
		testcluster.Eventually(t, 10*time.Second, func() error { // until the follower knows the leader's address
			_, err := api.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: node, Addr: "127.0.0.1", Gpus: 8, Cpus: 64, MemoryMb: 1024})
			return err
		})
	}
	old, err := pki.Load(pki.DirFiles(procs.CertDir(pki.KindController, follower.ID), pki.KindController))
	if err != nil {
		t.Fatal(err)
	}
	procs.Issue(t, pki.KindController, follower.ID)
	procs.Revoke(t, old.Serial())
	procs.Revoke(t, probeCert.Serial())
	for i := range procs.Replicas {
		procs.Hangup(i)
	}
	testcluster.Eventually(t, 10*time.Second, func() error {
		if s := servedSerial(t, follower.API); s.Cmp(old.Serial()) == 0 {
			return fmt.Errorf("%s still serves its old certificate", follower.ID)
		}
		if _, err := probe.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "gpu044"}); status.Code(err) != codes.Unauthenticated {
			return fmt.Errorf("the leader still takes a revoked node certificate: %v", err)
		}
		return nil
	})
	testcluster.Eventually(t, 10*time.Second, func() error {
		if _, err := viaFollower.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: "gpu043"}); err != nil {
			return fmt.Errorf("a heartbeat through %s, whose old certificate is revoked: %v", follower.ID, err)
		}
		return nil
	})
}
