package containerdtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
)

// Snapshotter is the snapshotter ImportBusybox unpacks for.
const Snapshotter = "overlayfs"

// Daemon is a private containerd daemon.
type Daemon struct {
	// Address is the daemon's unix socket.
	Address string
	// Dir holds the socket, root, state and log.
	Dir string
	// Namespace is this daemon's containerd namespace, unique per daemon:
	// runc keeps its state per namespace in one host-wide directory
	// (/run/containerd/runc/<namespace>), so two daemons running tests at
	// once must not share a namespace.
	Namespace string

	cmd *exec.Cmd
	log string
}

// binaries Start needs on PATH.
var binaries = []string{"containerd", "containerd-shim-runc-v2", "runc"}

// Start starts a private containerd daemon and stops it when the test ends.
func Start(t testing.TB) *Daemon {
	t.Helper()
	requirements(t)
	// A short directory name: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "phxctd-")
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{
		Address:   filepath.Join(dir, "c.sock"),
		Dir:       dir,
		Namespace: "phalanx-test-" + strings.TrimPrefix(filepath.Base(dir), "phxctd-"),
		log:       filepath.Join(dir, "containerd.log"),
	}
	if err := d.start(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start containerd: %v", err)
	}
	t.Cleanup(func() { d.stop(t) })
	if err := d.waitReady(30 * time.Second); err != nil {
		t.Fatalf("containerd did not come up: %v\n%s", err, d.Log())
	}
	return d
}

// requirements skips or fails the test when containerd cannot run here.
func requirements(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, b := range binaries {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "containerd tests need " + strings.Join(missing, ", ") +
		" (install the containerd and runc packages and run as root)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func (d *Daemon) config() string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(d.Dir, "root"), filepath.Join(d.Dir, "state"), d.Address,
		d.Address+".ttrpc", filepath.Join(d.Dir, "opt"))
}

func (d *Daemon) start() error {
	cfg := filepath.Join(d.Dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(d.config()), 0o600); err != nil {
		return err
	}
	logf, err := os.Create(d.log)
	if err != nil {
		return err
	}
	defer logf.Close()
	d.cmd = exec.Command("containerd", "--config", cfg, "--log-level", "info")
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return d.cmd.Start()
}

// waitReady waits until the daemon answers on its socket.
func (d *Daemon) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var err error
	for time.Now().Before(deadline) {
		if err = d.ping(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

func (d *Daemon) ping() error {
	if _, err := os.Stat(d.Address); err != nil {
		return err
	}
	c, err := containerd.New(d.Address, containerd.WithTimeout(time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = c.Version(ctx)
	return err
}

// Client returns a client of the daemon in d.Namespace, closed when the test
// ends.
func (d *Daemon) Client(t testing.TB) *containerd.Client {
	t.Helper()
	c, err := containerd.New(d.Address, containerd.WithDefaultNamespace(d.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Context returns a context in d.Namespace.
func (d *Daemon) Context() context.Context {
	return namespaces.WithNamespace(context.Background(), d.Namespace)
}

// Log returns what the daemon has logged.
func (d *Daemon) Log() string {
	b, _ := os.ReadFile(d.log)
	return string(b)
}

// stop removes what tests left behind, stops the daemon and removes its
// directory.
func (d *Daemon) stop(t testing.TB) {
	if err := d.removeContainers(); err != nil {
		t.Errorf("containerdtest: cleaning up containers: %v", err)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	if t.Failed() {
		t.Logf("containerd log:\n%s", d.Log())
	}
	unmountUnder(d.Dir)
	os.RemoveAll(d.Dir)
	// runc's per-namespace state, of d.Namespace and those beginning with it.
	states, _ := filepath.Glob(filepath.Join("/run/containerd/runc", d.Namespace+"*"))
	for _, s := range states {
		os.RemoveAll(s)
	}
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}
