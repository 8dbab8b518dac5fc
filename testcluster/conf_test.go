package testcluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// Log lines of controller/raft.go's bootstrap that these tests look for.
const (
	formedLine    = "formed a new cluster"
	peerIsMember  = "not forming a new cluster: a peer belongs to one"
	waitingOnPeer = "not forming a new cluster until every other replica answers"
)

// TestConfigFormsCluster: three replicas started from one phalanx.conf
// (three ControllerHost lines, nothing but their name, data dir and listen
// address on the command line) form one cluster; killed with SIGKILL and
// started again with the same config, they resume it without forming
// another.
func TestConfigFormsCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("three controller processes; not in -short")
	}
	procs := startFromConfig(t)
	leader, err := procs.Status(procs.Leader(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var raftPort string
	for i, p := range procs.Replicas {
		testcluster.Eventually(t, 10*time.Second, func() error {
			st, err := procs.Status(i, time.Second)
			if err != nil {
				return err
			}
			host, port, _ := net.SplitHostPort(st.RaftAddr)
			if raftPort == "" {
				raftPort = port
			}
			if st.Id != p.ID || st.ApiAddr != p.API || host != fmt.Sprintf("127.0.0.%d", 11+i) || port != raftPort {
				return fmt.Errorf("%s: id %s, API %s, Raft %s: not as its ControllerHost line says", p.ID, st.Id, st.ApiAddr, st.RaftAddr)
			}
			if st.LeaderId != leader.Id {
				return fmt.Errorf("%s follows %q, not %s", p.ID, st.LeaderId, leader.Id)
			}
			return nil
		})
	}
	job := submitOne(t, procs)
	formed := countInLogs(t, procs, formedLine)
	if formed == 0 {
		t.Fatalf("no replica logged %q", formedLine)
	}

	for i := range procs.Replicas {
		procs.Kill(i)
	}
	for i := range procs.Replicas {
		procs.Start(i)
	}
	if _, err := procs.WaitLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := jobOn(procs, -1, job); err != nil {
		t.Fatalf("job %d after the restart: %v", job, err)
	}
	if again := countInLogs(t, procs, formedLine); again != formed {
		t.Errorf("%d replicas formed a cluster after the restart", again-formed)
	}
	after, err := procs.Status(procs.Leader(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if after.Term <= leader.Term || after.LastLogIndex <= leader.LastLogIndex {
		t.Errorf("after the restart: term %d, log index %d; before: %d, %d (not the same log resumed)",
			after.Term, after.LastLogIndex, leader.Term, leader.LastLogIndex)
	}
}

// TestConfigWipedReplicaRejoins: a follower whose data dir was lost starts
// empty with the config that founded the cluster; its peers answer that
// they belong to one, so it does not bootstrap, and the leader brings it
// up to date.
func TestConfigWipedReplicaRejoins(t *testing.T) {
	if testing.Short() {
		t.Skip("three controller processes; not in -short")
	}
	procs := startFromConfig(t)
	job := submitOne(t, procs)
	lost := (procs.Leader() + 1) % len(procs.Replicas)
	procs.Kill(lost)
	procs.Wipe(lost)
	mark := logSize(t, procs, lost)
	procs.Start(lost)
	testcluster.Eventually(t, 20*time.Second, func() error {
		_, err := jobOn(procs, lost, job)
		return err
	})
	log := logSince(t, procs, lost, mark)
	if !strings.Contains(log, peerIsMember) || strings.Contains(log, formedLine) {
		t.Errorf("the wiped replica's log should say %q and not %q:\n%s", peerIsMember, formedLine, log)
	}
}

// TestConfigWipedReplicaWaitsForPeers: a replica whose data dir was lost
// starts while every peer is down. It must not found a cluster of its own
// (it waits, saying why) and joins the old one once the peers are back.
func TestConfigWipedReplicaWaitsForPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("three controller processes; not in -short")
	}
	procs := startFromConfig(t)
	job := submitOne(t, procs)
	for i := range procs.Replicas {
		procs.Kill(i)
	}
	procs.Wipe(0)
	mark := logSize(t, procs, 0)
	procs.Start(0)
	testcluster.Eventually(t, 20*time.Second, func() error {
		if log := logSince(t, procs, 0, mark); !strings.Contains(log, waitingOnPeer) {
			return fmt.Errorf("the wiped replica has not logged %q", waitingOnPeer)
		}
		return nil
	})
	st, err := procs.Status(0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.LastLogIndex != 0 || st.Role == "Leader" {
		t.Fatalf("alone and wiped, ctl1 is %s at log index %d: it founded a cluster", st.Role, st.LastLogIndex)
	}
	procs.Start(1)
	procs.Start(2)
	testcluster.Eventually(t, 30*time.Second, func() error {
		_, err := jobOn(procs, 0, job)
		return err
	})
	if log := logSince(t, procs, 0, mark); strings.Contains(log, formedLine) {
		t.Errorf("the wiped replica formed a cluster:\n%s", log)
	}
}

// TestConfigUnlistedReplicaRefused: a replica whose name no ControllerHost
// line has fails at once with one line saying so, even with a Raft address
// of its own (it used to bootstrap the listed replicas plus itself).
func TestConfigUnlistedReplicaRefused(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "phalanx.conf")
	lines := "ControllerHost=ctl1(127.0.0.11)\nControllerHost=ctl2(127.0.0.12)\nControllerHost=ctl3(127.0.0.13)\n"
	if err := os.WriteFile(conf, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(testcluster.BuildController(t, dir), "--config", conf, "--node-id", "ctl9",
		"--raft-addr", "127.0.0.19:0", "--listen", "127.0.0.19:0", "--data-dir", data)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit: %v, want status 2; output:\n%s", err, out)
	}
	want := "phalanx-controller: --node-id ctl9 is not among the ControllerHost lines of the config (ctl1, ctl2, ctl3): " +
		"add a ControllerHost=ctl9(ADDR) line to every replica's config, or give the name of one of them\n"
	if string(out) != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the refused replica touched its data dir: %v", err)
	}
}

// startFromConfig starts three replica processes placed by one shared
// phalanx.conf.
func startFromConfig(t *testing.T) *testcluster.Procs {
	t.Helper()
	bin := testcluster.BuildController(t, t.TempDir())
	return testcluster.StartProcs(t, bin, testcluster.ProcOptions{FromConfig: true})
}

// submitOne registers a node and submits a job to it through any replica;
// it returns the job's ID.
func submitOne(t *testing.T, procs *testcluster.Procs) uint64 {
	t.Helper()
	conn, err := procs.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nconn, err := apiclient.Dial(procs.APIAddrs(), apiclient.WithDialOptions(procs.Transport(procs.Material(t, pki.KindNode, "gpu001"))))
	if err != nil {
		t.Fatal(err)
	}
	defer nconn.Close()
	if _, err := phalanxv1.NewNodeServiceClient(nconn).RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{
		Name: "gpu001", Addr: "10.0.0.1", Cpus: 128, MemoryMb: 1 << 20, Gpus: 8, GpuModel: "NVIDIA A100-SXM4-80GB",
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := phalanxv1.NewControllerServiceClient(conn).SubmitJob(ctx, &phalanxv1.SubmitJobRequest{
		Spec: spec(t.TempDir(), "conf", 1, 8, "#!/bin/sh\ntrue\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.JobId
}

// jobOn reads a job from replica i's own state (a stale read), or through
// any replica for i < 0.
func jobOn(procs *testcluster.Procs, i int, id uint64) (*phalanxv1.Job, error) {
	addrs := procs.APIAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if i >= 0 {
		addrs, ctx = addrs[i:i+1], apiclient.Stale(ctx)
	}
	conn, err := procs.Dial(addrs...)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return phalanxv1.NewControllerServiceClient(conn).GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
}

func replicaLog(procs *testcluster.Procs, i int) string {
	return filepath.Join(procs.Dir, procs.Replicas[i].ID+".log")
}

// logSize is how long replica i's log is now, to read what follows.
func logSize(t *testing.T, procs *testcluster.Procs, i int) int {
	t.Helper()
	data, err := os.ReadFile(replicaLog(procs, i))
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// logSince returns replica i's log from byte offset on.
func logSince(t *testing.T, procs *testcluster.Procs, i, offset int) string {
	t.Helper()
	data, err := os.ReadFile(replicaLog(procs, i))
	if err != nil {
		t.Fatal(err)
	}
	return string(data[offset:])
}

// countInLogs counts the lines of every replica's log that hold s.
func countInLogs(t *testing.T, procs *testcluster.Procs, s string) int {
	t.Helper()
	n := 0
	for i := range procs.Replicas {
		data, err := os.ReadFile(replicaLog(procs, i))
		if err != nil {
			t.Fatal(err)
		}
		n += bytes.Count(data, []byte(s))
	}
	return n
}
