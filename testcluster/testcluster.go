// Package testcluster runs a Phalanx cluster inside one test process: a
// controller replica and several node agents with fake GPUs (go-nvml's mock,
// through the agent's real discovery code), on loopback with tight timings.
// Tests use it to drive whole jobs end to end and to inject faults (stop an
// agent, restart the controller on its data dir).
package testcluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller"
	"github.com/phalanx-hpc/phalanx/nodeagent"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
	"github.com/phalanx-hpc/phalanx/runtime/process"
	"github.com/phalanx-hpc/phalanx/topology"
)

// Options shape a test cluster.
type Options struct {
	Nodes       int    // default 4
	GPUsPerNode int    // default 8
	GPUModel    string // default "NVIDIA A100-SXM4-80GB"
	LeafSize    int    // default 2
	// Runtime is "process" (default) or "fake"; NewRuntime overrides both.
	Runtime    string
	NewRuntime func(node string) (runtime.Runtime, error)
	NodeTTL    time.Duration // default 2s
	KillGrace  time.Duration // default 1s
	// Dir is the state directory; default t.TempDir().
	Dir string
	// Partitions replace the controller's default partition (every node).
	Partitions []*cluster.Partition
}

// Cluster is a running test cluster.
type Cluster struct {
	t          testing.TB
	opts       Options
	Dir        string
	Controller *controller.Server
	Topology   *topology.Tree
	Nodes      []string
	// Fake is the shared fake runtime when Options.Runtime is "fake".
	Fake *fake.Runtime

	conn   *grpc.ClientConn
	Client phalanxv1.ControllerServiceClient

	mu     sync.Mutex
	agents map[string]*agentProc
}

type agentProc struct {
	cancel context.CancelFunc
	done   chan error
	link   *proxy // the node's network link to the controller
}

// New starts a cluster and registers its teardown with t.Cleanup. It returns
// once every node has registered.
func New(t testing.TB, o Options) *Cluster {
	t.Helper()
	o = o.withDefaults(t)
	c := &Cluster{t: t, opts: o, Dir: o.Dir, agents: map[string]*agentProc{}}
	var names []string
	c.Topology, names = topology.Generate((o.Nodes+o.LeafSize-1)/o.LeafSize, o.LeafSize, 16, "gpu")
	c.Nodes = names[:o.Nodes]
	if o.Runtime == "fake" && o.NewRuntime == nil {
		c.Fake = fake.New()
	}
	c.StartController()
	for _, n := range c.Nodes {
		c.StartAgent(n)
	}
	c.WaitNodes(len(c.Nodes))
	t.Cleanup(c.Close)
	return c
}

func (o Options) withDefaults(t testing.TB) Options {
	if o.Nodes == 0 {
		o.Nodes = 4
	}
	if o.GPUsPerNode == 0 {
		o.GPUsPerNode = 8
	}
	if o.GPUModel == "" {
		o.GPUModel = "NVIDIA A100-SXM4-80GB"
	}
	if o.LeafSize == 0 {
		o.LeafSize = 2
	}
	if o.Runtime == "" {
		o.Runtime = "process"
	}
	if o.NodeTTL == 0 {
		o.NodeTTL = 2 * time.Second
	}
	if o.KillGrace == 0 {
		o.KillGrace = time.Second
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	return o
}

func (c *Cluster) logger(component string) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("PHX_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{c.t}, &slog.HandlerOptions{Level: level})).With("c", component)
}

// StartController starts (or restarts) the controller on the cluster's data
// dir and waits for it to lead.
func (c *Cluster) StartController() {
	c.t.Helper()
	addr, raftAddr := "127.0.0.1:0", "127.0.0.1:0"
	if c.Controller != nil { // a restart keeps the addresses others know
		addr, raftAddr = c.Controller.APIAddr(), c.Controller.RaftAddr()
	}
	srv, err := controller.New(controller.Config{
		NodeID:            "controller-0",
		DataDir:           filepath.Join(c.Dir, "controller"),
		RaftAddr:          raftAddr,
		APIAddr:           addr,
		Bootstrap:         true,
		Topology:          c.Topology,
		FastRaft:          true,
		NodeTTL:           c.opts.NodeTTL,
		HeartbeatInterval: 200 * time.Millisecond,
		SchedInterval:     200 * time.Millisecond,
		KillGrace:         c.opts.KillGrace,
		Partitions:        c.opts.Partitions,
		Logger:            c.logger("controller"),
	})
	if err != nil {
		c.t.Fatalf("start controller: %v", err)
	}
	c.Controller = srv
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitLeader(ctx); err != nil {
		c.t.Fatalf("controller: %v", err)
	}
	if c.conn == nil {
		c.conn, err = grpc.NewClient(srv.APIAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			c.t.Fatalf("dial controller: %v", err)
		}
		c.Client = phalanxv1.NewControllerServiceClient(c.conn)
	}
}

// StopController closes the controller, keeping its data dir.
func (c *Cluster) StopController() {
	c.t.Helper()
	if err := c.Controller.Close(); err != nil {
		c.t.Errorf("close controller: %v", err)
	}
}

// StartAgent starts the agent of node name in this process.
func (c *Cluster) StartAgent(name string) {
	c.t.Helper()
	lib, err := gpu.Open(c.opts.GPUsPerNode, c.opts.GPUModel)
	if err != nil {
		c.t.Fatalf("agent %s: nvml mock: %v", name, err)
	}
	gpus, err := gpu.Discover(lib)
	if err != nil {
		c.t.Fatalf("agent %s: discover GPUs: %v", name, err)
	}
	rt, err := c.runtimeFor(name)
	if err != nil {
		c.t.Fatalf("agent %s: runtime: %v", name, err)
	}
	link, err := newProxy(c.Controller.APIAddr())
	if err != nil {
		c.t.Fatalf("agent %s: link: %v", name, err)
	}
	a, err := nodeagent.New(nodeagent.Config{
		Name:              name,
		Addr:              "127.0.0.1",
		Controller:        link.addr(),
		StateDir:          filepath.Join(c.Dir, "agents", name),
		Runtime:           rt,
		GPUs:              gpus,
		CPUs:              64,
		MemoryMB:          512 * 1024,
		HeartbeatInterval: 200 * time.Millisecond,
		KillGrace:         c.opts.KillGrace,
		Logger:            c.logger("agent-" + name),
	})
	if err != nil {
		c.t.Fatalf("agent %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &agentProc{cancel: cancel, done: make(chan error, 1), link: link}
	go func() { p.done <- a.Run(ctx) }()
	c.mu.Lock()
	c.agents[name] = p
	c.mu.Unlock()
}

func (c *Cluster) runtimeFor(node string) (runtime.Runtime, error) {
	switch {
	case c.opts.NewRuntime != nil:
		return c.opts.NewRuntime(node)
	case c.Fake != nil:
		return c.Fake, nil
	case c.opts.Runtime == "process":
		return process.New(), nil
	}
	return nil, fmt.Errorf("unknown runtime %q", c.opts.Runtime)
}

// StopAgent stops node name's agent gracefully (it stops its tasks first).
func (c *Cluster) StopAgent(name string) {
	c.mu.Lock()
	p := c.agents[name]
	delete(c.agents, name)
	c.mu.Unlock()
	if p == nil {
		return
	}
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		c.t.Errorf("agent %s did not stop within 30s", name)
	}
	p.link.close()
}

// CutNode cuts node name off the network: its agent and tasks keep running
// but cannot reach the controller, as when a host or its NIC dies.
func (c *Cluster) CutNode(name string) { c.link(name).setCut(true) }

// HealNode restores node name's network link.
func (c *Cluster) HealNode(name string) { c.link(name).setCut(false) }

func (c *Cluster) link(name string) *proxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.agents[name]
	if p == nil {
		c.t.Fatalf("no agent %s", name)
	}
	return p.link
}

// WaitNodes waits until n nodes have registered.
func (c *Cluster) WaitNodes(n int) {
	c.t.Helper()
	c.Eventually(10*time.Second, func() error {
		if nodes := c.Controller.Store().Nodes(); len(nodes) < n {
			return fmt.Errorf("%d of %d nodes registered", len(nodes), n)
		}
		return nil
	})
}

// Eventually retries f every 20ms until it returns nil or d passes, then
// fails the test with f's last error.
func (c *Cluster) Eventually(d time.Duration, f func() error) {
	c.t.Helper()
	Eventually(c.t, d, f)
}

// Eventually retries f until it returns nil or d passes, then fails t with
// f's last error. It is the only way tests here wait: never a bare sleep.
func Eventually(t testing.TB, d time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitJob waits until job id reaches one of the states and returns it.
func (c *Cluster) WaitJob(id uint64, d time.Duration, states ...string) *phalanxv1.Job {
	c.t.Helper()
	var job *phalanxv1.Job
	c.Eventually(d, func() error {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil {
			return err
		}
		job = j
		for _, s := range states {
			if j.State == s {
				return nil
			}
		}
		return fmt.Errorf("job %d is %s (%s), want %s", id, j.State, j.Reason, strings.Join(states, " or "))
	})
	return job
}

// Close stops every agent and the controller.
func (c *Cluster) Close() {
	c.mu.Lock()
	var names []string
	for n := range c.agents {
		names = append(names, n)
	}
	c.mu.Unlock()
	for _, n := range names {
		c.StopAgent(n)
	}
	if c.conn != nil {
		c.conn.Close()
	}
	if c.Controller != nil {
		c.Controller.Close()
	}
}

// testWriter sends log lines to the test log, dropping them once the test
// has finished (late goroutines must not panic the run).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { recover() }()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
