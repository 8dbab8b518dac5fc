// Package devcluster runs a whole Phalanx cluster on one machine for trying
// it out: a controller in this process, with its state in a temporary
// directory, and N phalanx-agent processes with fake GPUs (go-nvml's mock),
// each its own node, placed under leaf switches by a generated
// topology.conf. It is what `phx dev` runs.
//
// The agents are separate processes because NVML, and so GPU discovery,
// needs cgo, while phx and the controller are built without it; separate
// processes are also closer to a real cluster (an agent can be killed to
// see a node fail).
package devcluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/controller"
	"github.com/phalanx-hpc/phalanx/topology"
)

// Options shape the dev cluster.
type Options struct {
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
	// AgentBinary is the phalanx-agent executable; default: beside the
	// running executable, else on PATH.
	AgentBinary string
	// Dir holds all state; default a new temporary directory, removed on Close.
	Dir     string
	APIAddr string // default 127.0.0.1:7817
	// Log receives the components' log lines.
	Log io.Writer
}

// Cluster is a running dev cluster.
type Cluster struct {
	Controller *controller.Server
	Dir        string
	removeDir  bool
	agents     []*exec.Cmd
	wg         sync.WaitGroup
}

// Start brings up the controller and the agents and waits until every node
// has registered.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	o = o.withDefaults()
	c := &Cluster{Dir: o.Dir}
	if c.Dir == "" {
		d, err := os.MkdirTemp("", "phx-dev-")
		if err != nil {
			return nil, err
		}
		c.Dir, c.removeDir = d, true
	}
	agentBin, err := findAgent(o.AgentBinary)
	if err != nil {
		c.cleanup()
		return nil, err
	}
	tree, names, err := writeTopology(c.Dir, o)
	if err != nil {
		c.cleanup()
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c.Controller, err = controller.New(controller.Config{
		DataDir:           filepath.Join(c.Dir, "controller"),
		RaftAddr:          "127.0.0.1:0",
		APIAddr:           o.APIAddr,
		Bootstrap:         true,
		Topology:          tree,
		FastRaft:          true,
		NodeTTL:           15 * time.Second,
		HeartbeatInterval: time.Second,
		KillGrace:         5 * time.Second,
		Logger:            log,
	})
	if err != nil {
		c.cleanup()
		return nil, err
	}
	if err := c.Controller.WaitLeader(ctx); err != nil {
		c.Close()
		return nil, err
	}
	for _, name := range names {
		if err := c.startAgent(agentBin, name, o); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.waitNodes(ctx, len(names)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (o Options) withDefaults() Options {
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
	if o.Runtime == "" {
		o.Runtime = "process"
	}
	if o.APIAddr == "" {
		o.APIAddr = "127.0.0.1:7817"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// APIAddr is where phx should point PHX_SERVER.
func (c *Cluster) APIAddr() string { return c.Controller.APIAddr() }

func findAgent(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "phalanx-agent")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("phalanx-agent")
	if err != nil {
		return "", fmt.Errorf("phalanx-agent not found beside phx or on PATH: run `make build` (it puts both in bin/)")
	}
	return p, nil
}

// writeTopology generates the node names and a topology.conf with
// o.LeafSize nodes per leaf switch under one spine.
func writeTopology(dir string, o Options) (*topology.Tree, []string, error) {
	leaves := (o.Nodes + o.LeafSize - 1) / o.LeafSize
	var b strings.Builder
	var names []string
	for l := 0; l < leaves; l++ {
		var leafNodes []string
		for i := l * o.LeafSize; i < (l+1)*o.LeafSize && i < o.Nodes; i++ {
			leafNodes = append(leafNodes, fmt.Sprintf("gpu%03d", i+1))
		}
		names = append(names, leafNodes...)
		fmt.Fprintf(&b, "SwitchName=leaf%d Nodes=%s\n", l+1, strings.Join(leafNodes, ","))
	}
	var leafNames []string
	for l := 0; l < leaves; l++ {
		leafNames = append(leafNames, fmt.Sprintf("leaf%d", l+1))
	}
	fmt.Fprintf(&b, "SwitchName=spine1 Switches=%s\n", strings.Join(leafNames, ","))
	path := filepath.Join(dir, "topology.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return nil, nil, err
	}
	tree, err := topology.Load(path)
	return tree, names, err
}

func (c *Cluster) startAgent(bin, name string, o Options) error {
	args := []string{
		"--name", name,
		"--addr", "127.0.0.1",
		"--controller", c.Controller.APIAddr(),
		"--state-dir", filepath.Join(c.Dir, "agents", name),
		"--runtime", o.Runtime,
		"--fake-gpus", fmt.Sprint(o.GPUsPerNode),
		"--fake-gpu-model", o.GPUModel,
		"--cpus", fmt.Sprint(o.CPUs),
		"--memory-mb", fmt.Sprint(o.MemoryMB),
		"--heartbeat", "1s",
		"--kill-grace", "5s",
	}
	if o.Runtime == "containerd" && o.ContainerdAddress != "" {
		args = append(args, "--containerd-address", o.ContainerdAddress)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = o.Log
	cmd.Stderr = o.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start agent %s: %w", name, err)
	}
	c.agents = append(c.agents, cmd)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		cmd.Wait()
	}()
	return nil
}

func (c *Cluster) waitNodes(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		nodes := c.Controller.Store().Nodes()
		if len(nodes) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("only %d of %d agents registered within 30s (see the log for agent errors)", len(nodes), n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops the agents (their tasks are stopped with them), then the
// controller, and removes the temporary directory.
func (c *Cluster) Close() error {
	for _, a := range c.agents {
		if a.Process != nil {
			a.Process.Signal(syscall.SIGTERM)
		}
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		for _, a := range c.agents {
			a.Process.Kill()
		}
		<-done
	}
	var err error
	if c.Controller != nil {
		err = c.Controller.Close()
	}
	c.cleanup()
	return err
}

func (c *Cluster) cleanup() {
	if c.removeDir {
		os.RemoveAll(c.Dir)
	}
}
