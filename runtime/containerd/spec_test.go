package containerd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/containerd"
)

// writeGPUSpec writes a CDI spec for nvidia.com/gpu=0..7 whose device nodes
// are /dev/nvidia<i> in the container and /dev/null on the host, and
// returns its directory.
func writeGPUSpec(t *testing.T) string {
	t.Helper()
	var devs []string
	for i := 0; i < 8; i++ {
		devs = append(devs, fmt.Sprintf(
			`{"name": "%d", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia%d", "hostPath": "/dev/null"}]}}`, i, i))
	}
	body := `{"cdiVersion": "0.6.0", "kind": "nvidia.com/gpu",
		"containerEdits": {"env": ["NVIDIA_FAKE_CDI=1"], "deviceNodes": [{"path": "/dev/nvidiactl", "hostPath": "/dev/null"}]},
		"devices": [` + strings.Join(devs, ",") + `]}`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvidia.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeRDMASpec writes, in dir, a CDI spec for phalanx.dev/rdma=mlx5_0
// and mlx5_1 as the agent makes one (package rdma): character devices by
// major and minor, and rdma_cm for any of them.
func writeRDMASpec(t *testing.T, dir string) {
	t.Helper()
	body := `{"cdiVersion": "0.5.0", "kind": "phalanx.dev/rdma",
		"containerEdits": {"deviceNodes": [{"path": "/dev/infiniband/rdma_cm", "type": "c", "major": 10, "minor": 58, "fileMode": 438, "permissions": "rw"}]},
		"devices": [
			{"name": "mlx5_0", "containerEdits": {"deviceNodes": [{"path": "/dev/infiniband/uverbs0", "type": "c", "major": 231, "minor": 192, "fileMode": 438, "permissions": "rw"}]}},
			{"name": "mlx5_1", "containerEdits": {"deviceNodes": [{"path": "/dev/infiniband/uverbs1", "type": "c", "major": 231, "minor": 193, "fileMode": 438, "permissions": "rw"}]}}]}`
	if err := os.WriteFile(filepath.Join(dir, "phalanx.dev-rdma.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func testSpec() runtime.Spec {
	return runtime.Spec{
		ID:      "phx-7-0-1",
		Argv:    []string{"/bin/sh", "-c", "train"},
		Env:     []string{"FOO=bar", "PATH=/bin"},
		WorkDir: "/work",
		UID:     1000, GID: 1001,
		GPUs:   []int{0, 3},
		Mounts: []runtime.Mount{{Source: "/data", Target: "/mnt/data", ReadOnly: true}, {Source: "/scratch", Target: "/scratch"}},
	}
}

// generate applies SpecOpts for spec to containerd's default spec.
func generate(t *testing.T, spec runtime.Spec, cfg containerd.SpecConfig) *oci.Spec {
	t.Helper()
	opts, err := containerd.SpecOpts(spec, cfg)
	if err != nil {
		t.Fatalf("SpecOpts: %v", err)
	}
	ctx := namespaces.WithNamespace(context.Background(), "test")
	s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: spec.ID}, opts...)
	if err != nil {
		t.Fatalf("GenerateSpec: %v", err)
	}
	return s
}

// RDMA devices are injected next to the GPUs; one no spec describes is
// an error that names it.
func TestSpecOptsInjectsRDMADevices(t *testing.T) {
	dir := writeGPUSpec(t)
	writeRDMASpec(t, dir)
	spec := testSpec()
	spec.Devices = []string{"phalanx.dev/rdma=mlx5_0", "phalanx.dev/rdma=mlx5_1"}
	s := generate(t, spec, containerd.SpecConfig{CDISpecDirs: []string{dir}})
	var paths []string
	for _, d := range s.Linux.Devices {
		paths = append(paths, fmt.Sprintf("%s %s %d:%d", d.Path, d.Type, d.Major, d.Minor))
	}
	for _, want := range []string{"/dev/nvidia0 c 1:3", "/dev/infiniband/uverbs0 c 231:192", "/dev/infiniband/uverbs1 c 231:193", "/dev/infiniband/rdma_cm c 10:58"} {
		if !slices.Contains(paths, want) {
			t.Errorf("devices %q lack %s", paths, want)
		}
	}
	spec.Devices = []string{"phalanx.dev/rdma=mlx5_7"}
	if _, err := containerd.SpecOpts(spec, containerd.SpecConfig{CDISpecDirs: []string{dir}}); !errors.Is(err, cluster.ErrNotFound) || !strings.Contains(err.Error(), "phalanx.dev/rdma=mlx5_7") {
		t.Errorf("a device no spec describes: %v", err)
	}
}

func TestSpecOptsInjectsCDIGPUs(t *testing.T) {
	s := generate(t, testSpec(), containerd.SpecConfig{CDISpecDirs: []string{writeGPUSpec(t)}})
	var paths []string
	for _, d := range s.Linux.Devices {
		paths = append(paths, d.Path)
		if d.Type != "c" || d.Major != 1 || d.Minor != 3 {
			t.Errorf("device %s = %s %d:%d, want c 1:3 (/dev/null)", d.Path, d.Type, d.Major, d.Minor)
		}
	}
	slices.Sort(paths)
	if want := []string{"/dev/nvidia0", "/dev/nvidia3", "/dev/nvidiactl"}; !slices.Equal(paths, want) {
		t.Errorf("devices = %v, want %v", paths, want)
	}
	allowed := false
	for _, r := range s.Linux.Resources.Devices {
		if r.Allow && r.Type == "c" && r.Major != nil && *r.Major == 1 && r.Minor != nil && *r.Minor == 3 {
			allowed = true
		}
	}
	if !allowed {
		t.Errorf("no device cgroup rule allows c 1:3: %+v", s.Linux.Resources.Devices)
	}
	if !slices.Contains(s.Process.Env, "NVIDIA_FAKE_CDI=1") {
		t.Errorf("CDI env missing: %v", s.Process.Env)
	}
}

func TestSpecOptsShape(t *testing.T) {
	s := generate(t, testSpec(), containerd.SpecConfig{
		CDISpecDirs: []string{writeGPUSpec(t)}, ShmSize: "64g", Hostname: "gpu001",
	})
	if !slices.Equal(s.Process.Args, []string{"/bin/sh", "-c", "train"}) {
		t.Errorf("args = %v", s.Process.Args)
	}
	for _, kv := range []string{"FOO=bar", "PATH=/bin"} {
		if !slices.Contains(s.Process.Env, kv) {
			t.Errorf("env lacks %s: %v", kv, s.Process.Env)
		}
	}
	if s.Process.Cwd != "/work" || s.Process.User.UID != 1000 || s.Process.User.GID != 1001 {
		t.Errorf("cwd %q user %d:%d", s.Process.Cwd, s.Process.User.UID, s.Process.User.GID)
	}
	if s.Hostname != "gpu001" {
		t.Errorf("hostname = %q", s.Hostname)
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace || ns.Type == specs.PIDNamespace {
			t.Errorf("private %s namespace; want the host's", ns.Type)
		}
	}
	wantMounts := map[string]string{
		"/etc/hosts":       "/etc/hosts rbind,ro",
		"/etc/resolv.conf": "/etc/resolv.conf rbind,ro",
		"/mnt/data":        "/data rbind,rprivate,ro",
		"/scratch":         "/scratch rbind,rprivate,rw",
		"/dev/shm":         "shm nosuid,noexec,nodev,mode=1777,size=64g",
	}
	shms := 0
	for _, m := range s.Mounts {
		if m.Destination == "/dev/shm" {
			shms++
		}
		if want, ok := wantMounts[m.Destination]; ok {
			if got := m.Source + " " + strings.Join(m.Options, ","); got != want {
				t.Errorf("mount %s = %q, want %q", m.Destination, got, want)
			}
			delete(wantMounts, m.Destination)
		}
	}
	if len(wantMounts) > 0 || shms != 1 {
		t.Errorf("missing mounts %v; %d /dev/shm mounts", wantMounts, shms)
	}
	limits := map[string]uint64{}
	for _, r := range s.Process.Rlimits {
		if r.Soft != r.Hard {
			t.Errorf("%s soft %d != hard %d", r.Type, r.Soft, r.Hard)
		}
		limits[r.Type] = r.Hard
	}
	if limits["RLIMIT_MEMLOCK"] != ^uint64(0) || limits["RLIMIT_NOFILE"] != containerd.DefaultNofile {
		t.Errorf("rlimits = %v", limits)
	}
}

func TestSpecOptsWithoutCDISpecWarns(t *testing.T) {
	var logs bytes.Buffer
	s := generate(t, testSpec(), containerd.SpecConfig{
		CDISpecDirs: []string{t.TempDir()},
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if len(s.Linux.Devices) != 0 {
		t.Errorf("devices without a CDI spec: %+v", s.Linux.Devices)
	}
	if !strings.Contains(logs.String(), "no CDI spec for GPUs") {
		t.Errorf("no warning logged: %q", logs.String())
	}
}

func TestSpecOptsNoGPUsNeedsNoCDI(t *testing.T) {
	spec := testSpec()
	spec.GPUs = nil
	var logs bytes.Buffer
	s := generate(t, spec, containerd.SpecConfig{
		CDISpecDirs: []string{"/nonexistent"}, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if len(s.Linux.Devices) != 0 || logs.Len() != 0 {
		t.Errorf("devices %+v, logs %q", s.Linux.Devices, logs.String())
	}
	found := false
	for _, m := range s.Mounts {
		if m.Destination == "/dev/shm" && slices.Contains(m.Options, "size="+containerd.DefaultShmSize) {
			found = true
		}
	}
	if !found {
		t.Errorf("/dev/shm of the default size missing: %+v", s.Mounts)
	}
}

func TestSpecOptsErrors(t *testing.T) {
	spec := testSpec()
	spec.GPUs = []int{2, 9}
	_, err := containerd.SpecOpts(spec, containerd.SpecConfig{CDISpecDirs: []string{writeGPUSpec(t)}})
	if !errors.Is(err, cluster.ErrNotFound) || !strings.Contains(err.Error(), "nvidia.com/gpu=9") {
		t.Errorf("missing GPU 9: %v", err)
	}
	spec.Argv = nil
	if _, err := containerd.SpecOpts(spec, containerd.SpecConfig{}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("empty argv: %v", err)
	}
	if got := containerd.GPUDevice(4); got != "nvidia.com/gpu=4" {
		t.Errorf("GPUDevice(4) = %q", got)
	}
}
