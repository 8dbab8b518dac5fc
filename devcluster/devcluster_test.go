package devcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareCreatesDir: a --dir that does not exist is created, with the
// cluster's layout and topology in it.
func TestPrepareCreatesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	c := prepared(t, dir, Options{Controllers: 3, Nodes: 4, APIAddr: "127.0.0.1:0"})
	if len(c.Layout.Controllers) != 3 || len(c.Layout.Nodes) != 4 || c.Layout.GPUsPerNode != 0 {
		t.Errorf("layout %+v: want 3 controllers, 4 CPU-only nodes", c.Layout)
	}
	for _, f := range []string{"cluster.json", "topology.conf", "logs"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestPrepareRefusesSecond: while one phx dev holds a directory, another on
// it is refused.
func TestPrepareRefusesSecond(t *testing.T) {
	dir := t.TempDir()
	prepared(t, dir, Options{APIAddr: "127.0.0.1:0"})
	second := &Cluster{Dir: dir}
	defer second.Close()
	err := second.prepare(Options{})
	want := "another phx dev is running on " + dir + ": stop it first, or use another --dir"
	if err == nil || err.Error() != want {
		t.Fatalf("second phx dev on the same dir: %v, want %q", err, want)
	}
}

// TestResumeKeepsShape: resumed, a cluster keeps what its directory holds;
// an option left out takes it, one that agrees is fine, one that differs
// is refused with one line saying what the directory holds and what to do.
func TestResumeKeepsShape(t *testing.T) {
	dir := t.TempDir()
	first := prepared(t, dir, Options{Controllers: 3, Nodes: 4, GPUsPerNode: 8, APIAddr: "127.0.0.1:0"})
	held := first.Layout
	first.Close()
	for _, tc := range []struct {
		name string
		o    Options
		err  string // after "DIR holds a cluster with "
	}{
		{"nothing given", Options{GPUsPerNode: -1}, ""},
		{"the same shape", Options{Controllers: 3, Nodes: 4, GPUsPerNode: 8, GPUModel: "NVIDIA A100-SXM4-80GB",
			CPUs: 128, MemoryMB: 1 << 20, LeafSize: 2, APIAddr: held.Controllers[0].API}, ""},
		{"free ports again", Options{GPUsPerNode: -1, APIAddr: "127.0.0.1:0"}, ""},
		{"fewer controllers", Options{Controllers: 1, GPUsPerNode: -1}, "--controllers 3, not 1: leave --controllers out"},
		{"more nodes", Options{Nodes: 8, GPUsPerNode: -1}, "--nodes 4, not 8: leave --nodes out"},
		{"CPU-only nodes", Options{GPUsPerNode: 0}, "--gpus-per-node 8, not 0"},
		{"another model", Options{GPUsPerNode: -1, GPUModel: "NVIDIA H100"}, "--gpu-model NVIDIA A100-SXM4-80GB, not NVIDIA H100"},
		{"other leaves", Options{GPUsPerNode: -1, LeafSize: 1}, "--leaf-size 2, not 1"},
		{"more CPUs", Options{GPUsPerNode: -1, CPUs: 64}, "--cpus-per-node 128, not 64"},
		{"less memory", Options{GPUsPerNode: -1, MemoryMB: 1024}, "--memory-per-node 1048576, not 1024"},
		{"another port", Options{GPUsPerNode: -1, APIAddr: "127.0.0.1:7817"}, "--listen " + held.Controllers[0].API + ", not 127.0.0.1:7817"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{Dir: dir}
			defer c.Close()
			err := c.prepare(tc.o)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Layout.Controllers[0] != held.Controllers[0] || len(c.Layout.Nodes) != len(held.Nodes) {
					t.Errorf("resumed %+v, want %+v", c.Layout, held)
				}
				return
			}
			if err == nil {
				t.Fatalf("resumed; want an error")
			}
			prefix := dir + " holds a cluster with " + tc.err
			suffix := "or give another --dir (or remove " + dir + ") to start a new one"
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, suffix) || strings.Contains(msg, "\n") {
				t.Errorf("error %q\nwant one line %q...%q", msg, prefix, suffix)
			}
		})
	}
}

// prepared lays out (or resumes) a cluster in dir and releases the
// directory at the end of the test.
func prepared(t *testing.T, dir string, o Options) *Cluster {
	t.Helper()
	c := &Cluster{Dir: dir}
	t.Cleanup(func() { c.Close() })
	if err := c.prepare(o); err != nil {
		t.Fatal(err)
	}
	return c
}
