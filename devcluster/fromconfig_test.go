package devcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/config"
)

// A dev cluster from a config has one fake node per NodeName line, with
// what the line declares, the config's topology, and a phalanx.conf that
// includes the file.
func TestPrepareFromConfig(t *testing.T) {
	src := t.TempDir()
	conf := filepath.Join(src, "slurm.conf")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(conf, `ClusterName=lab
FooBar=1
TopologyPlugin=topology/tree
GresTypes=gpu
NodeName=gpu[001-002] CPUs=96 RealMemory=512000 Gres=gpu:h100:8 Feature=ib
NodeName=cpu01 CPUs=32 RealMemory=128000
PartitionName=gpu Nodes=gpu[001-002] Default=YES MaxTime=2-00:00:00
PartitionName=cpu Nodes=cpu01
`)
	write(filepath.Join(src, "topology.conf"), "SwitchName=leaf1 Nodes=gpu[001-002],cpu01\n")
	dir := t.TempDir()
	c := prepared(t, dir, Options{Config: conf, APIAddr: "127.0.0.1:0", GPUsPerNode: -1})
	l := c.Layout
	if strings.Join(l.Nodes, ",") != "gpu001,gpu002,cpu01" || l.Config != conf || l.Topology != filepath.Join(src, "topology.conf") {
		t.Fatalf("layout %+v", l)
	}
	if len(c.Warnings) != 1 || !strings.HasPrefix(c.Warnings[0], conf+":2: ") || !strings.Contains(c.Warnings[0], "FooBar") {
		t.Errorf("warnings %q; want the unknown key's, with its file and line", c.Warnings)
	}
	if h := l.hardware("gpu002"); h != (NodeHardware{GPUs: 8, GPUModel: "h100", CPUs: 96, MemoryMB: 512000}) {
		t.Errorf("gpu002: %+v", h)
	}
	if h := l.hardware("cpu01"); h.GPUs != 0 || h.CPUs != 32 || h.MemoryMB != 128000 {
		t.Errorf("cpu01: %+v", h)
	}
	if err := writeHealthCheck(dir, l.Config); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(configFile(dir))
	if !strings.Contains(string(data), "Include "+conf+"\n") || !strings.Contains(string(data), "HealthCheckProgram=") {
		t.Errorf("phalanx.conf:\n%s", data)
	}
	// The controllers read gres.conf from beside their config, as Slurm
	// from beside slurm.conf: the one beside the config given, written
	// after the start too.
	if _, err := config.Load(configFile(dir)); err != nil {
		t.Fatalf("the dev config without a gres.conf: %v", err)
	}
	write(filepath.Join(src, "gres.conf"), "NodeName=gpu001 Name=gpu Type=h100 Count=4\n")
	if _, err := config.Load(configFile(dir)); err == nil || !strings.Contains(err.Error(), "make them agree") {
		t.Errorf("the dev config, with a gres.conf beside the one given that disagrees with it: %v; want its error", err)
	}
	if err := os.Remove(filepath.Join(src, "gres.conf")); err != nil {
		t.Fatal(err)
	}
	c.Close()

	// Resumed with another config: refused.
	other := filepath.Join(src, "other.conf")
	write(other, "NodeName=n1 CPUs=4\n")
	again := &Cluster{Dir: dir}
	defer again.Close()
	if err := again.prepare(Options{Config: other, GPUsPerNode: -1}); err == nil || !strings.Contains(err.Error(), "made from --config") {
		t.Errorf("resumed with another config: %v", err)
	}

	for _, bad := range []struct{ text, want string }{
		{"PartitionName=p Nodes=ALL\n", "declares no nodes"},
		{"NodeName=n[001-100] CPUs=4\n", "declares 100 nodes"},
		{"NodeName=n1 Bogus\n", "--config: "},
		// Its agent failed: "fake RDMA host: ... at most 32 each".
		{"GresTypes=gpu\nNodeName=n1 CPUs=4 Gres=gpu:64\n", "node n1 declares 64 GPUs: a phx dev node fakes at most 32"},
	} {
		write(other, bad.text)
		c := &Cluster{Dir: t.TempDir()}
		err := c.prepare(Options{Config: other, APIAddr: "127.0.0.1:0", GPUsPerNode: -1})
		c.Close()
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("config %q: %v, want %q", bad.text, err, bad.want)
		}
	}
	// The topology.conf beside it is read as the controllers will, its
	// problems and the config's in one error.
	broken := t.TempDir()
	write(filepath.Join(broken, "slurm.conf"), "TopologyPlugin=topology/tree\nNodeName=n1 CPUs=4 Bogus\n")
	write(filepath.Join(broken, "topology.conf"), "SwitchName=leaf1 Nodes=n1 Speed=fast\n")
	bc := &Cluster{Dir: t.TempDir()}
	err := bc.prepare(Options{Config: filepath.Join(broken, "slurm.conf"), APIAddr: "127.0.0.1:0", GPUsPerNode: -1})
	bc.Close()
	if err == nil || !strings.Contains(err.Error(), "topology.conf:1") || !strings.Contains(err.Error(), "slurm.conf:2") {
		t.Errorf("a config and its topology.conf with errors: %v; want both files' errors", err)
	}
}
