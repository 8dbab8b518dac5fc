// Package devcluster runs a whole Phalanx cluster on one machine for trying
// it out: 1, 3 or 5 phalanx-controller processes (a Raft group) and N
// phalanx-agent processes with fake GPUs (go-nvml's mock), each its own
// node, placed under leaf switches by a generated topology.conf. It is what
// `phx dev` runs.
//
// Everything is a separate process, as on a real cluster: a controller or
// an agent can be killed (kill -9) to watch a failover or a node failure,
// and NVML, which needs cgo, stays in the agent while phx is built without
// it.
//
// State lives in one directory (a temporary one by default, removed at the
// end). Started again on the same directory, the cluster resumes: the
// controllers come back from their disks with their jobs, on the ports
// recorded in cluster.json the first time. A resumed cluster keeps its
// shape (controllers, nodes, GPUs, ports): options that ask for another
// are refused, never ignored.
package devcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
)

// Options shape the dev cluster. The zero value of each field that shapes
// it (GPUsPerNode: a negative one) means the default for a new cluster,
// and what Dir holds for one that resumes; a value that differs from what
// Dir holds is refused.
type Options struct {
	Controllers int    // replicas: 1 (default), 3 or 5
	Nodes       int    // default 4
	GPUsPerNode int    // negative: 8; 0: CPU-only nodes
	GPUModel    string // default "NVIDIA A100-SXM4-80GB"
	// CPUs and MemoryMB each fake node registers (default 128 and 1 TiB, a
	// DGX A100's), so job scripts written for real GPU nodes fit. Tasks
	// still share this machine's real CPUs and memory.
	CPUs     int
	MemoryMB int64
	LeafSize int    // nodes per leaf switch; default Nodes/2 (two leaves)
	Runtime  string // "process" (default) or "containerd"
	// ContainerdAddress is the containerd socket for Runtime "containerd".
	ContainerdAddress string
	// Bin is the directory of phalanx-controller and phalanx-agent;
	// default: beside the running executable, else on PATH.
	Bin string
	// Dir holds all state; default a new temporary directory, removed on
	// Close. An existing cluster in Dir is resumed.
	Dir string
	// APIAddr is the first controller's API address (default
	// 127.0.0.1:7817); the others take the next ports by tens (7827,
	// 7837...). Port 0 picks free ports.
	APIAddr string
	// Log receives the components' log lines (they also go to Dir/logs).
	Log io.Writer
	// Notices receives a line for each component that exits while the
	// cluster runs, and for each started again.
	Notices io.Writer
	// Config makes the cluster from a real phalanx.conf or slurm.conf: one
	// fake node per NodeName line (at most MaxConfigNodes), the file's
	// partitions and keys; Topology is its topology.conf (default: the
	// config's TopologyFile, or topology.conf beside it with
	// TopologyPlugin=topology/tree or topology/block). Nodes,
	// GPUsPerNode and LeafSize must not be given with it; GPUModel, CPUs
	// and MemoryMB are for the lines that do not say.
	Config, Topology string
}

// Cluster is a running dev cluster.
type Cluster struct {
	Dir    string
	Layout Layout
	// Warnings are the --config file's (and its topology.conf's), read
	// when the cluster was made, one line each with file and line.
	Warnings  []string
	removeDir bool
	lock      *os.File
	procs     []*proc
	stopAuth  func() // stops serving the auth socket
	stopCLI   func() // stops the CLI server
	keys      *auth.Keyring
	stopCtl   func() // stops serving the control socket
	notices   io.Writer

	mu      sync.Mutex
	up      bool // Start has returned the cluster
	closing bool // Close has begun: nothing starts again
}

// Replica is one controller of the dev cluster.
type Replica struct {
	ID   string
	API  string
	Raft string
}

// Start brings up the controllers, waits for a leader, starts the agents
// and waits until every node has registered.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Runtime == "" {
		o.Runtime = "process"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Notices == nil {
		o.Notices = io.Discard
	}
	c := &Cluster{Dir: o.Dir, notices: o.Notices}
	if c.Dir == "" {
		d, err := os.MkdirTemp("", "phx-dev-")
		if err != nil {
			return nil, err
		}
		c.Dir, c.removeDir = d, true
	}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	if err := c.prepare(o); err != nil {
		return nil, err
	}
	if err := writeHealthCheck(c.Dir, c.Layout.Config); err != nil {
		return nil, err
	}
	if err := c.serveAuth(); err != nil {
		return nil, err
	}
	if err := c.provisionTLS(); err != nil {
		return nil, err
	}
	bin, err := findBin(o.Bin)
	if err != nil {
		return nil, err
	}
	for _, r := range c.Layout.Controllers {
		if err := c.startController(bin, r, o); err != nil {
			return nil, err
		}
	}
	if err := c.waitLeader(ctx); err != nil {
		return nil, err
	}
	if err := c.serveCLI(); err != nil {
		return nil, err
	}
	for _, n := range c.Layout.Nodes {
		if err := c.startAgent(bin, n, o); err != nil {
			return nil, err
		}
	}
	if err := c.waitNodes(ctx); err != nil {
		return nil, err
	}
	if err := c.serveControl(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.up = true
	c.mu.Unlock()
	ok = true
	return c, nil
}

// withDefaults fills the options that shape a new cluster.
func (o Options) withDefaults() Options {
	if o.Controllers <= 0 {
		o.Controllers = 1
	}
	if o.Nodes <= 0 {
		o.Nodes = 4
	}
	if o.GPUsPerNode < 0 { // 0 is a CPU-only cluster
		o.GPUsPerNode = 8
	}
	if o.GPUModel == "" {
		o.GPUModel = "NVIDIA A100-SXM4-80GB"
	}
	if o.CPUs <= 0 {
		o.CPUs = 128
	}
	if o.MemoryMB <= 0 {
		o.MemoryMB = 1 << 20
	}
	if o.LeafSize <= 0 {
		o.LeafSize = (o.Nodes + 1) / 2
	}
	if o.APIAddr == "" {
		o.APIAddr = "127.0.0.1:7817"
	}
	return o
}

// APIAddrs are the controllers' API addresses, for PHX_SERVER.
func (c *Cluster) APIAddrs() []string {
	var out []string
	for _, r := range c.Layout.Controllers {
		out = append(out, r.API)
	}
	return out
}

func (c *Cluster) startController(bin string, r Replica, o Options) error {
	var peers, apis []string
	for _, p := range c.Layout.Controllers {
		peers = append(peers, p.ID+"="+p.Raft)
		if p != r {
			apis = append(apis, p.API)
		}
	}
	args := []string{
		"--node-id", r.ID,
		"--data-dir", filepath.Join(c.Dir, "controller-"+r.ID),
		"--listen", r.API,
		"--raft-addr", r.Raft,
		"--bootstrap", "--peers", strings.Join(peers, ","), "--peer-apis", strings.Join(apis, ","),
		"--config", configFile(c.Dir), // dev clusters ignore /etc/phalanx
		"--auth-key", c.keyFile(),
		"--auth-socket", "", // served by the dev process
		"--tls-dir", c.componentTLS(r.ID),
		"--node-ttl", "15s",
		"--heartbeat-interval", "1s",
		"--min-hang-timeout", "10s", // so that a hang can be watched on a dev cluster
		"--kill-grace", "5s",
	}
	switch {
	case c.Layout.Config == "":
		args = append(args, "--topology", filepath.Join(c.Dir, "topology.conf"))
	case c.Layout.Topology != "":
		args = append(args, "--topology", c.Layout.Topology)
	}
	return c.start(r.ID, filepath.Join(bin, "phalanx-controller"), args, o.Log)
}

func (c *Cluster) startAgent(bin, name string, o Options) error {
	hw := c.Layout.hardware(name)
	args := []string{
		"--name", name,
		"--addr", "127.0.0.1",
		"--controller", strings.Join(c.APIAddrs(), ","),
		"--state-dir", filepath.Join(c.Dir, "agents", name),
		"--runtime", o.Runtime,
		"--fake-gpus", fmt.Sprint(hw.GPUs),
		"--fake-gpu-model", hw.GPUModel,
		"--sysfs-root", sysfsRoot(c.Dir, name),
		"--fake-nics", fmt.Sprint(nicsPerNode(hw.GPUs)),
		// A laptop or a container (64 MiB /dev/shm) must still run the demo.
		"--min-free-mb", "100", "--min-shm-mb", "0",
		"--cpus", fmt.Sprint(hw.CPUs),
		"--memory-mb", fmt.Sprint(hw.MemoryMB),
		"--heartbeat", "1s",
		"--kill-grace", "5s",
		// A dev cluster that stops leaves nothing running.
		"--stop-tasks-on-exit",
		"--auth-key", c.keyFile(),
		"--auth-socket", "", // served by the dev process
		"--tls-dir", c.componentTLS(name),
	}
	if hw.GPUs > 0 {
		args = append(args, "--fake-gpu-faults", gpuFaults(c.Dir, name))
	}
	if o.Runtime == "containerd" && o.ContainerdAddress != "" {
		args = append(args, "--containerd-address", o.ContainerdAddress)
	}
	return c.start(name, filepath.Join(bin, "phalanx-agent"), args, o.Log)
}

func (c *Cluster) client() (phalanxv1.ControllerServiceClient, func(), error) {
	conn, err := c.dial()
	if err != nil {
		return nil, nil, err
	}
	return phalanxv1.NewControllerServiceClient(conn), func() { conn.Close() }, nil
}

// waitLeader waits until the controllers have a leader that answers.
func (c *Cluster) waitLeader(ctx context.Context) error {
	api, done, err := c.client()
	if err != nil {
		return err
	}
	defer done()
	return c.poll(ctx, 30*time.Second, func(ctx context.Context) error {
		_, err := api.ListPartitions(ctx, &phalanxv1.ListPartitionsRequest{})
		return err
	}, "the controllers did not elect a leader within 30s (see "+filepath.Join(c.Dir, "logs")+")")
}

// waitNodes waits until every node has registered and is not DOWN.
func (c *Cluster) waitNodes(ctx context.Context) error {
	api, done, err := c.client()
	if err != nil {
		return err
	}
	defer done()
	return c.poll(ctx, 30*time.Second, func(ctx context.Context) error {
		resp, err := api.ListNodes(ctx, &phalanxv1.ListNodesRequest{})
		if err != nil {
			return err
		}
		up := 0
		for _, n := range resp.Nodes {
			if n.State != "DOWN" {
				up++
			}
		}
		if up < len(c.Layout.Nodes) {
			return fmt.Errorf("%d of %d nodes up", up, len(c.Layout.Nodes))
		}
		return nil
	}, "not every agent registered within 30s (see "+filepath.Join(c.Dir, "logs")+")")
}

// poll retries f until it succeeds, a component exits, or d passes.
func (c *Cluster) poll(ctx context.Context, d time.Duration, f func(context.Context) error, msg string) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		callCtx, callCancel := context.WithTimeout(ctx, time.Second)
		err := f(callCtx)
		callCancel()
		if err == nil {
			return nil
		}
		for _, p := range c.procs {
			if cmd, _ := p.current(); !p.running() {
				return fmt.Errorf("%s exited: %v (see %s)", p.name, cmd.ProcessState, filepath.Join(c.Dir, "logs", p.name+".log"))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %v", msg, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops the agents (their tasks are stopped with them), then the
// controllers, and removes the temporary directory.
func (c *Cluster) Close() error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	if c.stopCtl != nil {
		c.stopCtl()
	}
	var agents, ctls []*proc
	for _, p := range c.procs {
		if strings.HasPrefix(p.name, "ctl") {
			ctls = append(ctls, p)
		} else {
			agents = append(agents, p)
		}
	}
	if c.stopCLI != nil {
		c.stopCLI()
	}
	stop(agents, 15*time.Second)
	stop(ctls, 10*time.Second)
	if c.stopAuth != nil {
		c.stopAuth()
	}
	for _, p := range c.procs {
		p.log.Close()
	}
	if c.lock != nil {
		c.lock.Close()
	}
	if c.removeDir {
		os.RemoveAll(c.Dir)
	}
	return nil
}
