package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/controller"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// tick is one line a fenced job's task writes: its attempt, node and the
// time in nanoseconds.
type tick struct {
	attempt int
	node    string
	at      int64
}

func readTicks(t *testing.T, path string) []tick {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []tick
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue // a line torn by a kill mid-write
		}
		a, err1 := strconv.Atoi(f[0])
		ns, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, tick{attempt: a, node: f[1], at: ns})
	}
	return out
}

// A node cut off from the controllers while its job runs, or whose agent
// is gone (stopped, its tasks left running, and not started again): no
// lease reaches the node any more, and its tasks' supervisors kill them
// when the lease ends; the controller declares the node lost only after
// its TTL, later, and restarts the job on healthy nodes. Both attempts
// append timestamps to one shared file: every line of attempt 0 comes
// before the first of attempt 1, so the two never overlapped. When the
// node comes back, nothing of the old attempt runs there.
func TestSilentNodeIsFencedBeforeItsJobRestarts(t *testing.T) {
	for _, fault := range []string{"cut", "agent-gone"} {
		t.Run(fault, func(t *testing.T) { fencedRestart(t, fault, processRig) })
	}
}

// fenceRig is how the fenced job's tasks run: as processes, or in
// containers (containerd_test.go).
type fenceRig struct {
	opts  func(*testcluster.Options) // sets the agents' runtime, if not the default
	image string                     // the job's image, if any
	// stamp is shell code that sets $now to the time in nanoseconds on the
	// clock that now reads.
	stamp string
	now   func() int64
}

var processRig = fenceRig{stamp: "now=$(date +%s%N)", now: func() int64 { return time.Now().UnixNano() }}

func fencedRestart(t *testing.T, fault string, rig fenceRig) {
	const ttl = 4 * time.Second // a lease of 3 s: a slow heartbeat under load does not fence a healthy node
	opts := testcluster.Options{Nodes: 3, LeafSize: 3, NodeTTL: ttl, AgentsKeepTasks: true}
	if rig.opts != nil {
		rig.opts(&opts)
	}
	c := testcluster.New(t, opts)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ticks := filepath.Join(dir, "ticks")
	script := "#!/bin/sh\nwhile true; do " + rig.stamp + "; echo \"$PHX_ATTEMPT $SLURMD_NODENAME $now\" >> " + ticks + "; sleep 0.02; done\n"
	js := spec(dir, "fenced", 2, 8, script)
	js.Image = rig.image
	id := submit(t, c, js)
	job := c.WaitJob(id, 20*time.Second, "RUNNING")
	cut := job.Alloc[1].Node
	c.Eventually(10*time.Second, func() error {
		for _, tk := range readTicks(t, ticks) {
			if tk.node == cut {
				return nil
			}
		}
		return fmt.Errorf("no line from %s yet", cut)
	})
	cutAt := rig.now()
	restartFrom := time.Now()
	if fault == "cut" {
		c.CutNode(cut)
	} else {
		c.StopAgent(cut)
	}

	c.Eventually(30*time.Second, func() error {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.Attempt != 1 || j.State != "RUNNING" {
			return fmt.Errorf("job %d: %s attempt %d, %v; want RUNNING in attempt 1", id, j.GetState(), j.GetAttempt(), err)
		}
		return nil
	})
	restarted := time.Since(restartFrom)
	j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, na := range j.Alloc {
		if na.Node == cut {
			t.Fatalf("attempt 1 placed on the lost node %s: %v", cut, j.Alloc)
		}
	}
	if a := j.Attempts[0]; a.State != "NODE_FAIL" || a.Cause != "node" || a.FaultNode != cut {
		t.Errorf("attempt 0: %v; want NODE_FAIL, cause node, fault node %s", a, cut)
	}
	// Let attempt 1 write for a while, then compare.
	c.Eventually(10*time.Second, func() error {
		n := 0
		for _, tk := range readTicks(t, ticks) {
			if tk.attempt == 1 {
				n++
			}
		}
		if n < 20 {
			return fmt.Errorf("%d lines of attempt 1", n)
		}
		return nil
	})
	var lastOld, firstNew, lastCut int64
	for _, tk := range readTicks(t, ticks) {
		switch tk.attempt {
		case 0:
			lastOld = max(lastOld, tk.at)
			if tk.node == cut {
				lastCut = max(lastCut, tk.at)
			}
		case 1:
			if firstNew == 0 || tk.at < firstNew {
				firstNew = tk.at
			}
		}
	}
	if lastOld == 0 || firstNew == 0 || lastOld >= firstNew {
		t.Fatalf("attempt 0 wrote until %d, attempt 1 from %d: the attempts overlapped", lastOld, firstNew)
	}
	fencedAfter := time.Duration(lastCut - cutAt)
	t.Logf("%s %s: its task's last line %s after the cut (lease %s), job RUNNING again after %s; %s between the attempts",
		fault, cut, fencedAfter.Round(time.Millisecond), controller.NodeLease(ttl), restarted.Round(time.Millisecond),
		time.Duration(firstNew-lastOld).Round(time.Millisecond))

	// Back on the network, the node registers again; nothing of attempt 0
	// writes any more.
	if fault == "cut" {
		c.HealNode(cut)
	} else {
		c.StartAgent(cut)
	}
	c.Eventually(20*time.Second, func() error {
		nodes, err := c.Client.ListNodes(context.Background(), &phalanxv1.ListNodesRequest{Names: []string{cut}})
		if err != nil || nodes.Nodes[0].State != "IDLE" {
			return fmt.Errorf("%s: %v, %v; want IDLE", cut, nodes, err)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // room for a survivor to write
	for _, tk := range readTicks(t, ticks) {
		if tk.attempt == 0 && tk.at > lastOld {
			t.Errorf("attempt 0 wrote again on %s after the node came back", tk.node)
		}
	}
	if _, err := c.Client.CancelJob(context.Background(), &phalanxv1.CancelJobRequest{JobIds: []uint64{id}}); err != nil {
		t.Fatal(err)
	}
}
