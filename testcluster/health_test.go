package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
	"github.com/phalanx-hpc/phalanx/internal/fakegpu"
	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// healthCluster starts two nodes and returns them with a phx that runs
// as root and fails the test on a non-zero exit.
func healthCluster(t *testing.T) (*testcluster.Cluster, func(args ...string) string) {
	return healthClusterWith(t, testcluster.Options{})
}

// healthClusterWith is healthCluster with more options.
func healthClusterWith(t *testing.T, opts testcluster.Options) (*testcluster.Cluster, func(args ...string) string) {
	if testing.Short() {
		t.Skip("builds phx; not in -short")
	}
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	if opts.Runtime == "" {
		opts.Runtime = "fake"
	}
	c := testcluster.New(t, opts)
	dir := t.TempDir()
	return c, func(args ...string) string {
		t.Helper()
		code, out, errOut := phxAs(t, c, auth.Identity{User: "root"}, dir, nil, args...)
		if code != 0 {
			t.Fatalf("phx %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
}

// An RDMA link going down on a node drains it within seconds, with the
// port named in `phx sinfo -R` and `scontrol show node`; the link coming
// back resumes it.
func TestLinkDownDrainsNode(t *testing.T) {
	c, phx := healthCluster(t)
	sick, well := c.Nodes[1], c.Nodes[0]
	if out := phx("scontrol", "show", "node", sick); !strings.Contains(out, "NICs=mlx5_0/1(ACTIVE,200Gb/s,InfiniBand,gpu:0-3@PIX),mlx5_1/1(ACTIVE,200Gb/s,InfiniBand,gpu:4-7@PIX)") {
		t.Fatalf("scontrol show node %s:\n%s", sick, out)
	}

	start := time.Now()
	c.SetLink(sick, "mlx5_1", false)
	c.Eventually(10*time.Second, func() error {
		out := phx("sinfo", "-R", "-h")
		if !strings.Contains(out, "rdma-link: mlx5_1/1") || !strings.Contains(out, "phalanx") || !strings.HasSuffix(strings.TrimSpace(out), sick) {
			return fmt.Errorf("sinfo -R: %q", out)
		}
		return nil
	})
	t.Logf("link down to DRAIN in sinfo -R: %v", time.Since(start).Round(time.Millisecond))
	out := phx("scontrol", "show", "node", sick)
	for _, want := range []string{"State=DRAINED", "mlx5_1/1(DOWN,", "Reason=rdma-link: mlx5_1/1 DOWN (Disabled) [phalanx@"} {
		if !strings.Contains(out, want) {
			t.Errorf("scontrol show node %s lacks %q:\n%s", sick, want, out)
		}
	}
	if out := phx("sinfo", "-R", "-h"); strings.Contains(out, well) {
		t.Errorf("the healthy node is listed: %q", out)
	}

	c.SetLink(sick, "mlx5_1", true)
	c.Eventually(10*time.Second, func() error {
		if out := phx("sinfo", "-R", "-h"); out != "" {
			return fmt.Errorf("sinfo -R after link-up: %q", out)
		}
		if out := phx("sinfo", "-N", "-h", "-o", "%t"); out != "idle\nidle\n" {
			return fmt.Errorf("sinfo -N after link-up: %q", out)
		}
		return nil
	})
}

// A GPU XID that needs a reset drains its node, with the GPU and the XID
// in `phx sinfo -R`; the drain lasts until an administrator resumes the
// node (the XID is an event, not a state that could pass), and the node
// then stays in service; `phx events` lists its registration, the drain
// and the resume. An ECC error not yet reset drains it too, until the GPU
// is reset.
func TestGPUFaultDrainsNode(t *testing.T) {
	c, phx := healthCluster(t)
	sick := c.Nodes[1]
	idle := func() error {
		if out := phx("sinfo", "-R", "-h"); out != "" {
			return fmt.Errorf("sinfo -R: %q", out)
		}
		if out := phx("sinfo", "-N", "-h", "-o", "%t"); out != "idle\nidle\n" {
			return fmt.Errorf("sinfo -N: %q", out)
		}
		return nil
	}

	c.InjectGPUFault(sick, fakegpu.Fault{Kind: fakegpu.XID, GPU: 3, XID: 13}) // the application's: nothing happens
	start := time.Now()
	c.InjectGPUFault(sick, fakegpu.Fault{Kind: fakegpu.XID, GPU: 2, XID: 48})
	c.Eventually(10*time.Second, func() error {
		out := phx("sinfo", "-R", "-h")
		if !strings.HasPrefix(out, "gpu-xid: GPU 2 XID 4") || !strings.Contains(out, "phalanx") || !strings.HasSuffix(strings.TrimSpace(out), sick) {
			return fmt.Errorf("sinfo -R: %q", out)
		}
		return nil
	})
	t.Logf("XID to DRAIN in sinfo -R: %v", time.Since(start).Round(time.Millisecond))
	if out := phx("scontrol", "show", "node", sick); !strings.Contains(out, "Reason=gpu-xid: GPU 2 XID 48 (double bit ECC error): reset the GPU [phalanx@") {
		t.Errorf("scontrol show node %s:\n%s", sick, out)
	}
	time.Sleep(time.Second) // several heartbeats: an event does not pass by itself
	if out := phx("sinfo", "-R", "-h"); !strings.Contains(out, "gpu-xid: GPU 2 XID 4") {
		t.Fatalf("the XID's drain lifted by itself: %q", out)
	}

	phx("scontrol", "update", "NodeName="+sick, "State=RESUME")
	c.Eventually(10*time.Second, idle)
	time.Sleep(time.Second) // several heartbeats: the XID is not reported again
	if err := idle(); err != nil {
		t.Fatalf("after the admin's resume: %v", err)
	}

	// phx events tells the node's story: its registration, the drain for
	// the XID, and root's resume; each once, whatever the heartbeats in
	// between.
	var story []string
	for i, line := range strings.Split(strings.TrimSpace(phx("events", "--node", sick)), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 4 {
			continue // the header
		}
		if f[1] != sick {
			t.Errorf("phx events --node %s lists %s: %q", sick, f[1], line)
		}
		story = append(story, f[2]+" by "+f[3]+": "+strings.Join(f[4:], " "))
	}
	want := []string{
		"registered by phalanx: 8 GPUs",
		"drained by phalanx: gpu-xid: GPU 2 XID 48 (double bit ECC error): reset the GPU",
		"resumed by root: was DRAIN: gpu-xid: GPU 2 XID 48",
	}
	if len(story) != len(want) {
		t.Fatalf("phx events --node %s:\n%s\nwant %d events: %q", sick, strings.Join(story, "\n"), len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(story[i], w) {
			t.Errorf("event %d: %q, want %q...", i+1, story[i], w)
		}
	}

	c.InjectGPUFault(sick, fakegpu.Fault{Kind: fakegpu.ECC, GPU: 5})
	c.Eventually(10*time.Second, func() error {
		if out := phx("sinfo", "-R", "-h"); !strings.HasPrefix(out, "gpu-ecc: GPU 5 has 1") {
			return fmt.Errorf("sinfo -R: %q", out)
		}
		return nil
	})
	c.InjectGPUFault(sick, fakegpu.Fault{Kind: fakegpu.Reset, GPU: 5})
	c.Eventually(10*time.Second, idle)
}

// A failing Prolog stops the job's attempt before its task runs: the job
// ends NODE_FAIL with the prolog's words, the node is drained with them
// until an administrator resumes it, and the next job runs. A working
// directory that does not exist is the job's fault: it fails, and the
// node stays in service.
func TestPrologFailureDrainsNode(t *testing.T) {
	dir := runtimetest.SharedDir(t)
	flag := filepath.Join(dir, "scratch-missing")
	prolog := filepath.Join(dir, "prolog")
	body := "#!/bin/sh\nif [ -e " + flag + " ]; then echo \"/scratch is not mounted on $SLURMD_NODENAME\" >&2; exit 1; fi\n"
	if err := os.WriteFile(prolog, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	c, phx := healthClusterWith(t, testcluster.Options{Prolog: cluster.Prolog{Programs: []string{prolog}, Timeout: 10 * time.Second}})
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	first := spec(dir, "first", 1, 1, "#!/bin/sh\ntrue\n")
	first.NoRequeue = true // ends NODE_FAIL; TestPrologFailureRestartsTheJob has the restart
	failed := submit(t, c, first)
	j := c.WaitJob(failed, 20*time.Second, "NODE_FAIL")
	sick := j.Alloc[0].Node
	want := fmt.Sprintf("prolog on %s: %s exit status 1: /scratch is not mounted on %s (job %d); node drained", sick, prolog, sick, failed)
	if j.Reason != want {
		t.Errorf("job reason %q, want %q", j.Reason, want)
	}
	c.Eventually(10*time.Second, func() error {
		out := phx("sinfo", "-R", "-h")
		if !strings.HasPrefix(out, "prolog: "+prolog[:min(len(prolog), 12)]) || !strings.HasSuffix(strings.TrimSpace(out), sick) {
			return fmt.Errorf("sinfo -R: %q", out)
		}
		return nil
	})
	if out := phx("scontrol", "show", "node", sick); !strings.Contains(out, "Reason=prolog: "+prolog+" exit status 1: /scratch is not mounted on "+sick) {
		t.Errorf("scontrol show node %s:\n%s", sick, out)
	}

	// The user's fault: the node stays in service.
	os.Remove(flag)
	missing := spec(filepath.Join(dir, "nope"), "lost", 1, 0, "#!/bin/sh\ntrue\n")
	missing.Output = filepath.Join(dir, "lost.out")
	bad := submit(t, c, missing)
	j = c.WaitJob(bad, 20*time.Second, "FAILED")
	if want := fmt.Sprintf("JobLaunchFailure: prestart-workdir on %s: working directory %q does not exist", j.Alloc[0].Node, filepath.Join(dir, "nope")); j.Reason != want {
		t.Errorf("job reason %q, want %q", j.Reason, want)
	}
	if out := strings.TrimSpace(phx("sinfo", "-R", "-h")); !strings.HasSuffix(out, sick) || strings.Contains(out, "\n") {
		t.Errorf("sinfo -R after the user's fault: %q; want only %s", out, sick)
	}

	phx("scontrol", "update", "NodeName="+sick, "State=RESUME")
	c.Eventually(10*time.Second, func() error {
		if out := phx("sinfo", "-R", "-h"); out != "" {
			return fmt.Errorf("sinfo -R after the resume: %q", out)
		}
		return nil
	})
	two := submit(t, c, spec(dir, "second", 2, 1, "#!/bin/sh\ntrue\n"))
	c.WaitJob(two, 20*time.Second, "RUNNING") // on both nodes: the fake runtime runs it until cancelled
}

// With NodeName lines, the config is the cluster: a node that registers
// with less memory than its line is INVAL with Slurm's reason, a declared
// node without an agent is down* (not responding), and a node no line
// declares is refused.
func TestDeclaredNodesThroughTheAgents(t *testing.T) {
	conf := []config.NodeConf{{Name: "gpu0001", GPUs: 8}, {Name: "gpu0002", MemoryMB: 1 << 40}, {Name: "gpu0099", GPUs: 8}}
	c, phx := healthClusterWith(t, testcluster.Options{Nodes: 3, NodeConf: conf})
	nodes, err := c.Client.ListNodes(context.Background(), &phalanxv1.ListNodesRequest{Names: []string{"gpu0002"}})
	if err != nil {
		t.Fatal(err)
	}
	reported := nodes.Nodes[0].MemoryMb
	want := fmt.Sprintf("Low RealMemory (reported:%d < configured:%d)", reported, int64(1)<<40)
	c.Eventually(10*time.Second, func() error {
		out := phx("sinfo", "-N", "-h", "-o", "%N %t")
		if out != "gpu0001 idle\ngpu0002 inval\ngpu0099 down*\n" {
			return fmt.Errorf("sinfo -N:\n%s", out)
		}
		return nil
	})
	if out := phx("scontrol", "show", "node", "gpu0002"); !strings.Contains(out, "State=INVAL ") || !strings.Contains(out, "Reason="+want+" [phalanx@") {
		t.Errorf("scontrol show node gpu0002:\n%s", out)
	}
	if out := phx("scontrol", "show", "node", "gpu0099"); !strings.Contains(out, "State=DOWN* ") || !strings.Contains(out, "Reason=Not responding [phalanx@") {
		t.Errorf("scontrol show node gpu0099:\n%s", out)
	}
	time.Sleep(time.Second) // several of gpu0003's registration attempts
	if _, err := c.Leader().Store().Node("gpu0003"); err == nil {
		t.Error("gpu0003, which no NodeName line declares, was registered")
	}
	if out := phx("events", "--node", "gpu0002"); !strings.Contains(out, "INVAL: "+want) {
		t.Errorf("phx events --node gpu0002:\n%s", out)
	}
}

// A job whose prolog fails on one node is restarted on another: same ID,
// attempt 1, the failed node avoided and drained, the attempts in
// scontrol show job, SLURM_RESTART_COUNT in its environment.
func TestPrologFailureRestartsTheJob(t *testing.T) {
	dir := runtimetest.SharedDir(t)
	prolog := filepath.Join(dir, "prolog")
	body := "#!/bin/sh\nif [ -e " + dir + "/fail-$SLURMD_NODENAME ]; then echo no scratch >&2; exit 1; fi\n"
	if err := os.WriteFile(prolog, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	c, phx := healthClusterWith(t, testcluster.Options{Runtime: "process", Prolog: cluster.Prolog{Programs: []string{prolog}, Timeout: 10 * time.Second}})
	bad := c.Nodes[0]
	if err := os.WriteFile(filepath.Join(dir, "fail-"+bad), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The good node is drained first, so that the first attempt goes to
	// the bad one.
	good := c.Nodes[1]
	phx("scontrol", "update", "NodeName="+good, "State=DRAIN", "Reason=wait")
	id := submit(t, c, spec(dir, "restarts", 1, 1, "#!/bin/sh\necho restart=$SLURM_RESTART_COUNT attempt=$PHX_ATTEMPT on $SLURMD_NODENAME\n"))
	c.Eventually(20*time.Second, func() error {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.Attempt != 1 || j.State != "PENDING" {
			return fmt.Errorf("job %v, %v: want PENDING in attempt 1", j, err)
		}
		return nil
	})
	phx("scontrol", "update", "NodeName="+good, "State=RESUME")
	j := c.WaitJob(id, 30*time.Second, "COMPLETED")
	if j.Attempt != 1 || len(j.Attempts) != 2 || j.Attempts[1].Alloc[0].Node == bad {
		t.Fatalf("job %d: attempt %d, attempts %v", id, j.Attempt, j.Attempts)
	}
	if a := j.Attempts[0]; a.State != "NODE_FAIL" || a.Cause != "node" || a.FaultNode != bad {
		t.Errorf("attempt 0: %v", a)
	}
	out, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("restarts-%d-0.out", id))) // %n: the rank
	if err != nil || string(out) != "restart=1 attempt=1 on "+good+"\n" {
		t.Errorf("the restarted job's output: %q, %v", out, err)
	}
	show := phx("scontrol", "show", "job", fmt.Sprint(id))
	for _, want := range []string{"Requeue=1 Restarts=1 ", "MaxRestarts=3 RestartOn=node",
		"Attempt=0 NodeList=" + bad, "State=NODE_FAIL Cause=node FaultNode=" + bad, "Attempt=1 NodeList=" + good} {
		if !strings.Contains(show, want) {
			t.Errorf("scontrol show job lacks %q:\n%s", want, show)
		}
	}
	if out := phx("sinfo", "-R", "-h"); !strings.HasPrefix(out, "prolog: ") || !strings.HasSuffix(strings.TrimSpace(out), bad) {
		t.Errorf("sinfo -R: %q", out)
	}
}

// A job placed on a node just resumed after an XID runs: the assignment
// carries the resume, so the agent's pre-start gate does not fail the job
// on the XID the resume dealt with (it reaches the agent before the next
// heartbeat's answer).
func TestJobRightAfterResume(t *testing.T) {
	c, phx := healthClusterWith(t, testcluster.Options{Runtime: "process"})
	sick := c.Nodes[1]
	c.InjectGPUFault(sick, fakegpu.Fault{Kind: fakegpu.XID, GPU: 2, XID: 48})
	c.Eventually(10*time.Second, func() error {
		if out := phx("sinfo", "-R", "-h"); !strings.Contains(out, "gpu-xid") {
			return fmt.Errorf("sinfo -R: %q", out)
		}
		return nil
	})
	phx("scontrol", "update", "NodeName="+sick, "State=RESUME")
	s := spec(t.TempDir(), "right-after", 1, 8, "#!/bin/sh\ntrue\n")
	s.Nodelist = []string{sick}
	id := submit(t, c, s)
	j := c.WaitJob(id, 20*time.Second, "COMPLETED", "FAILED", "NODE_FAIL")
	if j.State != "COMPLETED" || j.Attempt != 0 {
		t.Fatalf("job on the node just resumed: %s attempt %d (%s); want COMPLETED in attempt 0", j.State, j.Attempt, j.Reason)
	}
}
