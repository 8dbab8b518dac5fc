//go:build no_dynamic_plugins

// This file links the containerd client and NVML (through the agent's GPU
// discovery) into one test binary, which loads only when built with
// -tags no_dynamic_plugins (see the Makefile); `make test` does.

package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/containerd"
	"github.com/phalanx-hpc/phalanx/runtime/containerd/containerdtest"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// TestImageJobRunsInContainerd runs jobs with --image through the agent on
// a private containerd daemon and a busybox image built by the test.
func TestImageJobRunsInContainerd(t *testing.T) {
	d := containerdtest.Start(t) // skips only outside CI when containerd cannot run
	const image = "phalanx.test/busybox:e2e"
	containerdtest.ImportBusybox(t, d, image)

	c := testcluster.New(t, testcluster.Options{
		Nodes: 2, LeafSize: 2, ClientBinary: buildPhx(t),
		NewRuntime: func(node string) (runtime.Runtime, error) {
			return containerd.New(context.Background(), d.Address, d.Namespace,
				containerd.WithHostname(node))
		},
	})
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ok := spec(dir, "ctr-ok", 2, 1, "#!/bin/sh\necho \"rank=$RANK world=$WORLD_SIZE host=$(hostname) busybox=$(ls /bin/busybox)\"\n")
	ok.Image = image
	okID := submit(t, c, ok)
	bad := spec(dir, "ctr-bad", 1, 0, "#!/bin/sh\necho failing on purpose\nexit 3\n")
	bad.Image = image
	badID := submit(t, c, bad)

	// Slurm's commands are on the container's PATH and reach the
	// controllers as the job's user, as phx sbatch's environment says.
	tools := spec(dir, "ctr-tools", 2, 1, `#!/bin/sh
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
state=$(squeue -h -j "$SLURM_JOB_ID" -o %T)
echo "first=$first state=$state"
`)
	tools.Image = image
	tools.Environment = []string{"PATH=/usr/bin:/bin", "PHX_AUTH_SOCKET=/run/phx-test/auth.sock"}
	toolsID := submit(t, c, tools)

	job := c.WaitJob(okID, 60*time.Second, "COMPLETED", "FAILED")
	if job.State != "COMPLETED" {
		t.Fatalf("image job ended %s (%s); tasks %v", job.State, job.Reason, job.Tasks)
	}
	for rank := 0; rank < 2; rank++ {
		path := filepath.Join(dir, "ctr-ok-"+strconv.FormatUint(okID, 10)+"-"+strconv.Itoa(rank)+".out")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("rank %d output: %v", rank, err)
		}
		// The container has the node's name as hostname and the image's files.
		want := "rank=" + strconv.Itoa(rank) + " world=2 host=" + job.Alloc[rank].Node + " busybox=/bin/busybox"
		if strings.TrimSpace(string(data)) != want {
			t.Errorf("rank %d output %q, want %q", rank, strings.TrimSpace(string(data)), want)
		}
	}

	// (A rank may ask before the other has started: CONFIGURING.)
	job = c.WaitJob(toolsID, 60*time.Second, "COMPLETED", "FAILED")
	for rank := range 2 {
		data, _ := os.ReadFile(filepath.Join(dir, "ctr-tools-"+strconv.FormatUint(toolsID, 10)+"-"+strconv.Itoa(rank)+".out"))
		got, first := strings.TrimSpace(string(data)), "first="+job.Alloc[0].Node
		if job.State != "COMPLETED" || (got != first+" state=RUNNING" && got != first+" state=CONFIGURING") {
			t.Errorf("rank %d of a container job using scontrol and squeue: %s, output %q; want %q and its state", rank, job.State, got, first)
		}
	}

	job = c.WaitJob(badID, 60*time.Second, "FAILED", "COMPLETED")
	if job.State != "FAILED" || job.ExitCode != 3 {
		t.Fatalf("failing image job: %s exit %d; want FAILED exit 3", job.State, job.ExitCode)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "ctr-bad-"+strconv.FormatUint(badID, 10)+"-0.out"))
	if !strings.Contains(string(data), "failing on purpose") {
		t.Errorf("failing job output %q", data)
	}

	// Nothing is left behind in containerd once the jobs are done.
	client := d.Client(t)
	c.Eventually(20*time.Second, func() error {
		ctrs, err := client.Containers(d.Context())
		if err != nil {
			return err
		}
		if len(ctrs) != 0 {
			return errorf("%d containers left after the jobs ended", len(ctrs))
		}
		return nil
	})
}

func init() {
	containerd.RunTaskIOIfAsked() // the containers' I/O keeper is this test binary
}

// containerRig runs the agents' tasks in containers on a private containerd
// daemon, each node in a namespace of its own with its own state
// directory, as if each had its own daemon: a restarted agent finds its
// node's containers, and only those.
func containerRig(t *testing.T) fenceRig {
	d := containerdtest.Start(t) // skips only outside CI when containerd cannot run
	const image = "phalanx.test/busybox:fence"
	states := t.TempDir()
	var mu sync.Mutex
	imported := map[string]bool{}
	return fenceRig{
		opts: func(o *testcluster.Options) {
			o.NewRuntime = func(node string) (runtime.Runtime, error) {
				ns := d.Namespace + "-" + node
				mu.Lock()
				if !imported[ns] {
					containerdtest.ImportBusyboxIn(t, d, ns, image)
					imported[ns] = true
				}
				mu.Unlock()
				return containerd.New(context.Background(), d.Address, ns,
					containerd.WithHostname(node), containerd.WithStateDir(filepath.Join(states, node)))
			}
		},
		image: image,
		// busybox's date has no %N: the boot clock, in hundredths.
		stamp: "read up _ < /proc/uptime; now=${up%.*}${up#*.}0000000",
		now:   func() int64 { return int64(runtime.BootClock()) },
	}
}

// TestSilentContainerNodeIsFenced is TestSilentNodeIsFencedBeforeItsJobRestarts
// with the job in containers: their I/O keepers fence them.
func TestSilentContainerNodeIsFenced(t *testing.T) {
	for _, fault := range []string{"cut", "agent-gone"} {
		t.Run(fault, func(t *testing.T) { fencedRestart(t, fault, containerRig(t)) })
	}
}

// A container job goes on while its agent restarts: the new agent finds the
// container through containerd, nothing the job wrote meanwhile is lost,
// and the job completes in its first attempt.
func TestContainerJobOutlivesItsAgent(t *testing.T) {
	rig := containerRig(t)
	opts := testcluster.Options{Nodes: 1, LeafSize: 1, NodeTTL: 6 * time.Second, AgentsKeepTasks: true}
	rig.opts(&opts)
	c := testcluster.New(t, opts)
	dir := t.TempDir()
	const lines = 40
	js := spec(dir, "outlives", 1, 8, "#!/bin/sh\ni=0\nwhile [ $i -lt "+strconv.Itoa(lines)+" ]; do echo line $i; i=$((i+1)); sleep 0.1; done\n")
	js.Image = rig.image
	id := submit(t, c, js)
	job := c.WaitJob(id, 30*time.Second, "RUNNING")
	node := job.Alloc[0].Node
	time.Sleep(time.Second)
	c.StopAgent(node)
	time.Sleep(1500 * time.Millisecond)
	c.StartAgent(node)
	job = c.WaitJob(id, 30*time.Second, "COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED")
	if job.State != "COMPLETED" || job.Attempt != 0 {
		t.Fatalf("job %d ended %s in attempt %d (%s), want COMPLETED in attempt 0", id, job.State, job.Attempt, job.Reason)
	}
	out, err := os.ReadFile(filepath.Join(dir, "outlives-"+strconv.FormatUint(id, 10)+"-0.out"))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range lines {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if string(out) != want.String() {
		t.Errorf("output = %q, want lines 0 to %d, each once", out, lines-1)
	}
}
