package devcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/phalanx-hpc/phalanx/internal/freeport"
	"github.com/phalanx-hpc/phalanx/topology"
)

// Layout is what cluster.json records the first time a cluster starts in a
// directory, so that a restart finds the same cluster.
type Layout struct {
	Controllers []Replica
	Nodes       []string
	GPUsPerNode int
	GPUModel    string
	CPUs        int
	MemoryMB    int64
	// From --config (fromconfig.go): the config file and its topology
	// ("": none), absolute, and each node's hardware; empty otherwise.
	Config   string                  `json:",omitempty"`
	Topology string                  `json:",omitempty"`
	Hardware map[string]NodeHardware `json:",omitempty"`
}

// prepare makes the directory, takes its lock (one phx dev per
// directory), and reads cluster.json (refusing options that ask for
// another cluster) or writes a new one with the topology.
func (c *Cluster) prepare(o Options) error {
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(c.Dir, "dev.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return fmt.Errorf("another phx dev is running on %s: stop it first, or use another --dir", c.Dir)
	}
	c.lock = lock
	path := filepath.Join(c.Dir, "cluster.json")
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &c.Layout); err != nil {
			return fmt.Errorf("%s: %w (remove %s to start a new cluster)", path, err, c.Dir)
		}
		if len(c.Layout.Controllers) == 0 || len(c.Layout.Nodes) == 0 {
			return fmt.Errorf("%s names no controller or no node: remove %s to start a new cluster", path, c.Dir)
		}
		return c.Layout.checkResume(c.Dir, o)
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	return c.create(path, o.withDefaults())
}

// create lays out a new cluster: ports, nodes and topology, recorded in
// path.
func (c *Cluster) create(path string, o Options) error {
	var err error
	if c.Layout.Controllers, err = pickPorts(o.APIAddr, o.Controllers); err != nil {
		return err
	}
	c.Layout.GPUsPerNode, c.Layout.GPUModel, c.Layout.CPUs, c.Layout.MemoryMB = o.GPUsPerNode, o.GPUModel, o.CPUs, o.MemoryMB
	if o.Config != "" {
		err = c.fromConfig(o)
	} else {
		c.Layout.Nodes, err = writeTopology(c.Dir, o)
	}
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(c.Layout, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// checkResume refuses options that ask for another cluster than the one in
// dir: a resumed cluster keeps its shape, and an option that changes it
// would otherwise be ignored without a word.
func (l Layout) checkResume(dir string, o Options) error {
	leaf := 0
	if o.LeafSize > 0 {
		var err error
		if leaf, err = leafSize(dir, l.Nodes); err != nil {
			return err
		}
	}
	first := l.Controllers[0].API
	if o.Config != "" {
		if abs, err := filepath.Abs(o.Config); err != nil || abs != l.Config {
			return fmt.Errorf("%s holds a cluster made from --config %q, not %s: leave --config out to resume it, or give another --dir (or remove %s) to start a new one", dir, l.Config, o.Config, dir)
		}
	}
	for _, f := range []struct {
		flag        string
		given, held any
		differs     bool
	}{
		{"--controllers", o.Controllers, len(l.Controllers), o.Controllers > 0 && o.Controllers != len(l.Controllers)},
		{"--nodes", o.Nodes, len(l.Nodes), o.Nodes > 0 && o.Nodes != len(l.Nodes)},
		{"--gpus-per-node", o.GPUsPerNode, l.GPUsPerNode, o.GPUsPerNode >= 0 && o.GPUsPerNode != l.GPUsPerNode},
		{"--gpu-model", o.GPUModel, l.GPUModel, o.GPUModel != "" && o.GPUModel != l.GPUModel},
		{"--cpus-per-node", o.CPUs, l.CPUs, o.CPUs > 0 && o.CPUs != l.CPUs},
		{"--memory-per-node", o.MemoryMB, l.MemoryMB, o.MemoryMB > 0 && o.MemoryMB != l.MemoryMB},
		{"--leaf-size", o.LeafSize, leaf, o.LeafSize > 0 && o.LeafSize != leaf},
		{"--listen", o.APIAddr, first, o.APIAddr != "" && !sameListen(o.APIAddr, first)},
	} {
		if f.differs {
			return fmt.Errorf("%s holds a cluster with %s %v, not %v: leave %s out to resume it, or give another --dir (or remove %s) to start a new one",
				dir, f.flag, f.held, f.given, f.flag, dir)
		}
	}
	return nil
}

// sameListen reports whether --listen given names the first controller's
// API address held; port 0 (free ports) matches the ports picked then.
func sameListen(given, held string) bool {
	gh, gp, err := net.SplitHostPort(given)
	if err != nil {
		return false
	}
	hh, hp, _ := net.SplitHostPort(held)
	return gh == hh && (gp == hp || gp == "0")
}

// leafSize is how many nodes the first leaf switch of dir's topology.conf
// holds.
func leafSize(dir string, nodes []string) (int, error) {
	t, err := topology.Load(filepath.Join(dir, "topology.conf"))
	if err != nil {
		return 0, fmt.Errorf("%w (remove %s to start a new cluster)", err, dir)
	}
	n := 0
	for _, name := range nodes {
		if t.LeafOf(name) == t.LeafOf(nodes[0]) {
			n++
		}
	}
	return n, nil
}

// pickPorts gives each replica an API port and a Raft port: from the
// first API address by tens (Raft two above), or free ports for port 0.
func pickPorts(first string, n int) ([]Replica, error) {
	host, portStr, err := net.SplitHostPort(first)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: want HOST:PORT", first)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: want HOST:PORT", first)
	}
	var out []Replica
	for i := 0; i < n; i++ {
		r := Replica{ID: fmt.Sprintf("ctl%d", i+1)}
		if port == 0 {
			if r.API, err = freeport.Addr(host); err == nil {
				r.Raft, err = freeport.Addr(host)
			}
			if err != nil {
				return nil, err
			}
		} else {
			r.API = net.JoinHostPort(host, strconv.Itoa(port+10*i))
			r.Raft = net.JoinHostPort(host, strconv.Itoa(port+10*i+2))
		}
		out = append(out, r)
	}
	return out, nil
}

func findBin(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if self, err := os.Executable(); err == nil {
		dir := filepath.Dir(self)
		if _, err := os.Stat(filepath.Join(dir, "phalanx-agent")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "phalanx-controller")); err == nil {
				return dir, nil
			}
		}
	}
	p, err := exec.LookPath("phalanx-controller")
	if err == nil {
		if _, aerr := exec.LookPath("phalanx-agent"); aerr == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", fmt.Errorf("phalanx-controller and phalanx-agent not found beside phx or on PATH: run `make build` (it puts them in bin/)")
}

// writeTopology generates the node names and a topology.conf with
// o.LeafSize nodes per leaf switch under one spine.
func writeTopology(dir string, o Options) ([]string, error) {
	leaves := (o.Nodes + o.LeafSize - 1) / o.LeafSize
	var b strings.Builder
	var names, leafNames []string
	for l := 0; l < leaves; l++ {
		var leafNodes []string
		for i := l * o.LeafSize; i < (l+1)*o.LeafSize && i < o.Nodes; i++ {
			leafNodes = append(leafNodes, fmt.Sprintf("gpu%03d", i+1))
		}
		names = append(names, leafNodes...)
		leafNames = append(leafNames, fmt.Sprintf("leaf%d", l+1))
		fmt.Fprintf(&b, "SwitchName=leaf%d Nodes=%s\n", l+1, strings.Join(leafNodes, ","))
	}
	fmt.Fprintf(&b, "SwitchName=spine1 Switches=%s\n", strings.Join(leafNames, ","))
	return names, os.WriteFile(filepath.Join(dir, "topology.conf"), []byte(b.String()), 0o644)
}
