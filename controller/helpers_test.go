package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"google.golang.org/grpc"
)

// newTestServer starts a single-replica controller on loopback with tight
// timings (in cfg.DataDir at cfg.RaftAddr when set, for a restart, else a
// new directory and port) and waits until it leads.
func newTestServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.DataDir == "" { // else a restart
		cfg.DataDir = t.TempDir()
	}
	if cfg.RaftAddr == "" {
		cfg.RaftAddr = "127.0.0.1:0"
	}
	cfg.APIAddr = "127.0.0.1:0"
	cfg.Bootstrap, cfg.FastRaft = true, true
	if cfg.SchedInterval == 0 {
		cfg.SchedInterval = 50 * time.Millisecond
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if !cfg.Insecure && cfg.AuthKeys == nil {
		cfg.AuthKeys = auth.Ring(testKey)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// testKey is the cluster key of test servers.
var testKey = auth.Key(strings.Repeat("k", auth.MinKeySize))

// rootCredentials are a test client's: root's, signed with testKey.
func rootCredentials() grpc.DialOption {
	return grpc.WithPerRPCCredentials(auth.Issuer(auth.Ring(testKey), auth.Identity{User: "root", Kind: auth.KindLocal}, time.Hour))
}

// rootToken is root's credential, for phx's $PHX_TOKEN.
func rootToken(t testing.TB) string {
	tok, err := auth.Issue(testKey, auth.Identity{User: "root", Kind: auth.KindLocal}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// register registers nodes with 8 GPUs each through the node API.
func register(t *testing.T, s *Server, features []string, names ...string) {
	t.Helper()
	ns := &nodeService{s: s}
	for _, n := range names {
		_, err := ns.RegisterNode(context.Background(), &phalanxv1.RegisterNodeRequest{
			Name: n, Addr: "127.0.0.1", Cpus: 64, MemoryMb: 512000, Gpus: 8, GpuModel: "a100", Features: features,
		})
		if err != nil {
			t.Fatalf("register %s: %v", n, err)
		}
	}
}

func testSpec(nodes, gpus int) *phalanxv1.JobSpec {
	return &phalanxv1.JobSpec{Name: "t", User: "alice", Uid: 1000, Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp",
		Nodes: int32(nodes), GpusPerNode: int32(gpus)}
}

// eventually retries f until it returns nil or d passes.
func eventually(t *testing.T, d time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitState waits until job id is in state st and returns it.
func waitState(t *testing.T, s *Server, id cluster.JobID, st cluster.JobState) *cluster.Job {
	t.Helper()
	var j *cluster.Job
	eventually(t, 10*time.Second, func() error {
		var err error
		if j, err = s.store.Job(id); err != nil {
			return err
		}
		if j.State != st {
			return fmt.Errorf("job %d is %s (%s), want %s", id, j.State, j.Reason, st)
		}
		return nil
	})
	return j
}

// nodeJobs returns the live jobs on a node.
func nodeJobs(s *Server, node string) []*cluster.Job {
	jobs, _ := s.store.NodeJobs(node)
	return jobs
}
