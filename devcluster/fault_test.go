package devcluster

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/internal/fakegpu"
)

// fakeDevDir lays out what InjectFault reads of a dev cluster: its
// cluster.json and node gpu001's hardware directory.
func fakeDevDir(t *testing.T, gpus int) string {
	t.Helper()
	dir := t.TempDir()
	data, err := json.Marshal(Layout{Nodes: []string{"gpu001"}, GPUsPerNode: gpus})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(sysfsRoot(dir, "gpu001"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestInjectGPUFaults(t *testing.T) {
	dir := fakeDevDir(t, 8)
	for _, tc := range []struct {
		kind string
		gpu  int
		want fakegpu.Fault
	}{
		{"xid=79", 3, fakegpu.Fault{Kind: fakegpu.XID, GPU: 3, XID: 79}},
		{"ecc", 0, fakegpu.Fault{Kind: fakegpu.ECC}},
		{"gpu-lost", 7, fakegpu.Fault{Kind: fakegpu.Lost, GPU: 7}},
		{"temperature=95", 1, fakegpu.Fault{Kind: fakegpu.Temperature, GPU: 1, Value: 95}},
		{"gpu-reset", 7, fakegpu.Fault{Kind: fakegpu.Reset, GPU: 7}},
	} {
		if err := InjectFault(dir, "gpu001", tc.kind, Where{GPU: tc.gpu}); err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		r := &fakegpu.Reader{Path: gpuFaults(dir, "gpu001")}
		faults, err := r.Next()
		if err != nil || len(faults) == 0 || faults[len(faults)-1] != tc.want {
			t.Errorf("%s on GPU %d: the file holds %+v, %v; want %+v last", tc.kind, tc.gpu, faults, err, tc.want)
		}
	}
	for _, tc := range []struct {
		kind string
		gpu  int
	}{{"xid", 0}, {"xid=abc", 0}, {"ecc=3", 0}, {"melt", 0}, {"xid=0", 0}, {"ecc", 8}, {"ecc", -1}} {
		if err := InjectFault(dir, "gpu001", tc.kind, Where{GPU: tc.gpu}); !errors.Is(err, cluster.ErrInvalid) {
			t.Errorf("%s on GPU %d: err = %v, want ErrInvalid", tc.kind, tc.gpu, err)
		}
	}
	if err := InjectFault(dir, "gpu009", "ecc", Where{}); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("unknown node: err = %v, want ErrNotFound", err)
	}
	if err := InjectFault(fakeDevDir(t, 0), "gpu001", "ecc", Where{}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("CPU-only node: err = %v, want ErrInvalid", err)
	}
}

// health-fail makes the dev health program fail the node, as NHC would,
// and health-pass mends it.
func TestHealthFailDrill(t *testing.T) {
	dir := fakeDevDir(t, 8)
	if err := writeHealthCheck(dir, ""); err != nil {
		t.Fatal(err)
	}
	run := func() (string, error) {
		cmd := exec.Command(filepath.Join(dir, "healthcheck"))
		cmd.Env = []string{"SLURMD_NODENAME=gpu001", "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(); err != nil || out != "" {
		t.Fatalf("healthy node: %q, %v", out, err)
	}
	if err := InjectFault(dir, "gpu001", FaultHealthFail, Where{}); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err == nil || out != "ERROR: dev health check: failed its drill (phx dev fault health-fail)\n" {
		t.Errorf("after health-fail: %q, %v", out, err)
	}
	for range 2 { // mending a mended node is fine
		if err := InjectFault(dir, "gpu001", FaultHealthPass, Where{}); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := run(); err != nil || out != "" {
		t.Errorf("after health-pass: %q, %v", out, err)
	}
	conf, err := os.ReadFile(configFile(dir))
	if err != nil || !strings.Contains(string(conf), "HealthCheckProgram="+filepath.Join(dir, "healthcheck")+"\nHealthCheckInterval=2\n") {
		t.Errorf("config %q, %v", conf, err)
	}
}
