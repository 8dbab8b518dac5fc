package testcluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/phalanx-hpc/phalanx/internal/fakegpu"
	"github.com/phalanx-hpc/phalanx/internal/fakesysfs"
	"github.com/phalanx-hpc/phalanx/nodeagent"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Node agents of a test cluster: started in this process, each behind a
// link the test can cut.

// agentProc is a running agent.
type agentProc struct {
	cancel context.CancelFunc
	done   chan error
	link   *link // the node's network connection to the controllers
	hup    chan os.Signal
}

// StartAgent starts the agent of node name in this process.
func (c *Cluster) StartAgent(name string) {
	c.t.Helper()
	rt, err := c.runtimeFor(name)
	if err != nil {
		c.t.Fatalf("agent %s: runtime: %v", name, err)
	}
	p := startAgent(c.t, agentSpec{tls: c.Material(c.t, pki.KindNode, name), secrets: &c.Secrets,
		name: name, controllers: c.APIAddrs(), stateDir: filepath.Join(c.Dir, "agents", name), runtime: rt,
		gpus: c.opts.GPUsPerNode, model: c.opts.GPUModel, killGrace: c.opts.KillGrace, keepTasks: c.opts.AgentsKeepTasks, client: c.opts.ClientBinary,
		authSocket: c.AuthSocket, caCert: c.CACert, log: c.logger("agent-" + name),
	})
	c.mu.Lock()
	c.agents[name] = p
	c.mu.Unlock()
}

// agentSpec is what an in-process agent needs.
type agentSpec struct {
	name        string
	controllers []string
	stateDir    string
	runtime     runtime.Runtime
	gpus        int
	model       string
	killGrace   time.Duration
	keepTasks   bool // leave the tasks running when the agent stops
	log         *slog.Logger
	tls         *pki.Material // the node's certificate
	secrets     *Secrets
	client      string // Config.ClientBinary
	authSocket  string // Config.AuthSocket
	caCert      string // Config.CACert
}

// nicsPerNode is how many RDMA NICs each test node has, in its fake sysfs
// tree at <state dir>/sys.
const nicsPerNode = 2

// sysfsRoot is where node name's fake sysfs tree is.
func (c *Cluster) sysfsRoot(name string) string { return filepath.Join(c.Dir, "agents", name, "sys") }

// SetLink brings an RDMA port of node name (nic: mlx5_0 or mlx5_1, port
// 1) down or up, as a cable pulled or plugged back; the node's agent sees
// it within its watch interval (100 ms).
func (c *Cluster) SetLink(name, nic string, up bool) {
	c.t.Helper()
	if err := fakesysfs.SetPort(c.sysfsRoot(name), nic, 1, up); err != nil {
		c.t.Fatal(err)
	}
}

// gpuFaults is where node name's fake GPUs read their faults.
func (c *Cluster) gpuFaults(name string) string {
	return filepath.Join(c.Dir, "agents", name, "gpu-faults")
}

// InjectGPUFault gives a fake GPU of node name a fault (package
// internal/fakegpu); the node's agent sees an XID at once and a state
// within its poll interval (100 ms).
func (c *Cluster) InjectGPUFault(name string, f fakegpu.Fault) {
	c.t.Helper()
	if err := fakegpu.Inject(c.gpuFaults(name), f); err != nil {
		c.t.Fatal(err)
	}
}

// discoverNICs writes the node's fake sysfs tree (once) and reads it, as
// phalanx-agent --fake-nics does.
func discoverNICs(t testing.TB, root string, gpus []gpu.Device) []rdma.Port {
	ids := make([]string, len(gpus))
	for i, g := range gpus {
		ids[i] = g.PCIBusID
	}
	if err := fakesysfs.Write(root, fakesysfs.Host{GPUs: ids, NICs: nicsPerNode}); err != nil {
		t.Fatalf("fake sysfs: %v", err)
	}
	ports, err := rdma.Discover(root, rdma.SysfsLister{Root: root})
	if err != nil {
		t.Fatalf("RDMA discovery: %v", err)
	}
	rdma.Affinity(root, ports, ids)
	return ports
}

// startAgent runs a node agent in this process over go-nvml's mock GPUs,
// its connections through a link the test can cut.
func startAgent(t testing.TB, s agentSpec) *agentProc {
	t.Helper()
	lib, err := gpu.Open(s.gpus, s.model, gpu.FaultFile(filepath.Join(s.stateDir, "gpu-faults")), gpu.Logger(s.log))
	if err != nil {
		t.Fatalf("agent %s: nvml mock: %v", s.name, err)
	}
	gpus, err := gpu.Discover(lib)
	if err != nil {
		t.Fatalf("agent %s: discover GPUs: %v", s.name, err)
	}
	root := filepath.Join(s.stateDir, "sys")
	nics := discoverNICs(t, root, gpus)
	l := newLink()
	gw := &gpu.Watcher{Lib: lib, Devices: gpus, Interval: 100 * time.Millisecond, Log: s.log}
	a, err := nodeagent.New(nodeagent.Config{
		Name:              s.name,
		Addr:              "127.0.0.1",
		Controllers:       s.controllers,
		DialOptions:       []grpc.DialOption{grpc.WithContextDialer(l.dial), s.secrets.Transport(s.tls)},
		StateDir:          s.stateDir,
		Runtime:           s.runtime,
		StopTasksOnExit:   !s.keepTasks,
		GPUs:              gpus,
		NICs:              nics,
		NICWatcher:        &rdma.Watcher{Root: root, Interval: 100 * time.Millisecond, Log: s.log},
		GPUWatcher:        gw,
		GPUBusy:           gw.Busy,
		CPUs:              64,
		MemoryMB:          512 * 1024,
		HeartbeatInterval: 200 * time.Millisecond,
		KillGrace:         s.killGrace,
		TLS:               s.tls,
		ClientBinary:      s.client,
		AuthSocket:        s.authSocket,
		CACert:            s.caCert,
		Logger:            s.log,
	})
	if err != nil {
		t.Fatalf("agent %s: %v", s.name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &agentProc{cancel: cancel, done: make(chan error, 1), link: l, hup: make(chan os.Signal)}
	// As phalanx-agent does on SIGHUP: reload the TLS files, then
	// reconnect with them.
	s.tls.OnReload(a.Reconnect)
	s.tls.ReloadOn(p.hup, s.log)
	go func() { p.done <- a.Run(ctx) }()
	return p
}

// HangupAgent does to node name's agent what SIGHUP does to phalanx-agent:
// it reads its TLS files again and reconnects with them.
func (c *Cluster) HangupAgent(name string) {
	c.mu.Lock()
	p := c.agents[name]
	c.mu.Unlock()
	p.hup <- syscall.SIGHUP
}

// stop stops the agent gracefully (it stops its tasks first, unless it
// keeps them for its next run) and cuts its link.
func (p *agentProc) stop(t testing.TB, name string) {
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Errorf("agent %s did not stop within 30s", name)
	}
	p.link.setCut(true)
}

func (c *Cluster) runtimeFor(node string) (runtime.Runtime, error) {
	switch {
	case c.opts.NewRuntime != nil:
		return c.opts.NewRuntime(node)
	case c.Fake != nil:
		return c.Fake, nil
	case c.opts.Runtime == "process":
		return processRuntime(filepath.Join(c.Dir, "agents", node, "process")), nil
	}
	return nil, fmt.Errorf("unknown runtime %q", c.opts.Runtime)
}

// StopAgent stops node name's agent gracefully: it stops its tasks first,
// unless Options.AgentsKeepTasks.
func (c *Cluster) StopAgent(name string) {
	c.mu.Lock()
	p := c.agents[name]
	delete(c.agents, name)
	c.mu.Unlock()
	if p == nil {
		return
	}
	p.stop(c.t, name)
}

// CutNode cuts node name off the network: its agent and tasks keep running
// but cannot reach any controller, as when a host or its NIC dies.
func (c *Cluster) CutNode(name string) { c.link(name).setCut(true) }

// HealNode restores node name's network link.
func (c *Cluster) HealNode(name string) { c.link(name).setCut(false) }

func (c *Cluster) link(name string) *link {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.agents[name]
	if p == nil {
		c.t.Fatalf("no agent %s", name)
	}
	return p.link
}
