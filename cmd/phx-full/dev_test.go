package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/pki"
)

// TestDevThreeControllers runs `phx dev --controllers 3` on a --dir that
// does not exist yet: it creates it, prints an export line naming three
// controllers that elect a leader, and refuses a second phx dev on the same
// dir. Stopped and started again on the dir with no flags, it resumes the
// same cluster with its job; with flags asking for another shape, it
// refuses to start.
func TestDevThreeControllers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs controller and agent processes; not in -short")
	}
	bin := buildDevBinaries(t)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := filepath.Join(t.TempDir(), "new", "dev")

	first := startDev(t, "--controllers", "3", "--nodes", "2", "--gpus-per-node", "2", "--listen", "127.0.0.1:0", "--dir", dir)
	addrs := first.servers
	if len(addrs) != 3 {
		t.Fatalf("export line names %v, want three controllers", addrs)
	}
	api := devClient(t, first, addrs)
	// The dev cluster is secured: a plaintext call gets no answer, and a
	// call over TLS without a credential is refused.
	plain, err := apiclient.Dial(addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	plainCtx, plainCancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer plainCancel()
	if _, err := phalanxv1.NewControllerServiceClient(plain).ListJobs(plainCtx, &phalanxv1.ListJobsRequest{}); err == nil {
		t.Error("a plaintext call was answered")
	}
	trust, err := pki.Load(pki.TrustFiles(first.caCert))
	if err != nil {
		t.Fatal(err)
	}
	bare, err := apiclient.Dial(addrs, apiclient.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(trust.ClientConfig()))))
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, err := phalanxv1.NewControllerServiceClient(bare).ListJobs(context.Background(), &phalanxv1.ListJobsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a call without a credential: %v; want Unauthenticated", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "auth.key")); err != nil {
		t.Errorf("dev cluster key: %v", err)
	} else if fi.Mode().Perm() != 0o400 {
		t.Errorf("dev cluster key has mode %v, want 0400", fi.Mode())
	}
	if leaders := countLeaders(t, first, addrs); leaders != 1 {
		t.Errorf("%d controllers lead, want 1", leaders)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := api.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: &phalanxv1.JobSpec{
		Name: "kept", User: "alice", Uid: -1, Gid: -1, WorkDir: t.TempDir(), Script: "#!/bin/sh\ntrue\n",
		Nodes: 1, GpusPerNode: 1,
	}})
	if err != nil {
		t.Fatal(err)
	}
	killAndStartLeader(t, first, dir, api)

	want := "another phx dev is running on " + dir + ": stop it first, or use another --dir"
	if _, err := runDev(t, "--dir", dir); err == nil || err.Error() != want {
		t.Errorf("second phx dev on the same dir: %v, want %q", err, want)
	}
	first.stop(t)

	again := startDev(t, "--dir", dir)
	if strings.Join(again.servers, ",") != strings.Join(addrs, ",") {
		t.Errorf("resumed on %v, want the same controllers %v", again.servers, addrs)
	}
	job, err := devClient(t, again, addrs).GetJob(ctx, &phalanxv1.GetJobRequest{JobId: sub.JobId})
	if err != nil || job.GetSpec().GetName() != "kept" {
		t.Errorf("job %d after the restart: %v %v", sub.JobId, job, err)
	}
	again.stop(t)

	want = dir + " holds a cluster with --nodes 2, not 4: leave --nodes out to resume it, or give another --dir (or remove " + dir + ") to start a new one"
	if _, err := runDev(t, "--dir", dir, "--nodes", "4"); err == nil || err.Error() != want {
		t.Errorf("phx dev --nodes 4 on a 2-node dir: %v, want %q", err, want)
	}
}

// killAndStartLeader kills the leading replica with SIGKILL, submits
// through the others, and starts it again with phx dev start: it rejoins
// and catches up with what it missed.
func killAndStartLeader(t *testing.T, r *devRun, dir string, api phalanxv1.ControllerServiceClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := api.GetControllerStatus(ctx, &phalanxv1.GetControllerStatusRequest{})
	if err != nil || st.LeaderId == "" {
		t.Fatalf("no leader: %v %v", st, err)
	}
	leader := st.LeaderId
	pid := devProcess(t, dir, "phalanx-controller", "--node-id "+leader+" ")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	notice := "phx dev: " + leader + " exited (signal: killed); `phx dev start " + leader + "` starts it again\n"
	waitUntil(t, ctx, "phx dev to say the leader exited", func() bool { return strings.Contains(r.out.String(), notice) })
	if _, err := api.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: &phalanxv1.JobSpec{
		Name: "after", User: "alice", Uid: -1, Gid: -1, WorkDir: t.TempDir(), Script: "#!/bin/sh\ntrue\n", Nodes: 1, GpusPerNode: 1,
	}}); err != nil {
		t.Fatalf("submit with %s killed: %v", leader, err)
	}
	st, err = api.GetControllerStatus(ctx, &phalanxv1.GetControllerStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := runDevCommand(t, "start", "--dir", dir, leader); err != nil {
		t.Fatalf("phx dev start %s: %v\n%s", leader, err, out)
	}
	var addr string
	for i, id := range []string{"ctl1", "ctl2", "ctl3"} {
		if id == leader {
			addr = r.servers[i]
		}
	}
	var back *phalanxv1.ControllerStatus
	waitUntil(t, ctx, leader+" to catch up", func() bool {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		back, err = devClient(t, r, []string{addr}).GetControllerStatus(c, &phalanxv1.GetControllerStatusRequest{})
		return err == nil && back.AppliedIndex >= st.AppliedIndex && back.LeaderId != "" && back.LeaderId != leader
	})
	if back.Role != "Follower" {
		t.Errorf("%s started again is %s, want Follower", leader, back.Role)
	}
}

// devRun is a phx dev running in the test.
type devRun struct {
	servers []string // from its export lines
	socket  string
	caCert  string
	cancel  context.CancelFunc
	done    chan error
	out     *syncBuffer
}

var (
	exportLine = regexp.MustCompile(`(?m)^export PHX_SERVER=(\S+)$`)
	socketLine = regexp.MustCompile(`(?m)^export PHX_AUTH_SOCKET=(\S+)$`)
	caLine     = regexp.MustCompile(`(?m)^export PHX_CA_CERT=(\S+)$`)
)

// startDev runs phx dev with args until it prints its export line.
func startDev(t *testing.T, args ...string) *devRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &devRun{cancel: cancel, done: make(chan error, 1), out: &syncBuffer{}}
	go func() { r.done <- devApp(r.out).RunContext(ctx, append([]string{"phx", "dev"}, args...)) }()
	t.Cleanup(func() { r.stop(t) })
	deadline := time.After(40 * time.Second)
	for {
		if m := exportLine.FindStringSubmatch(r.out.String()); m != nil {
			r.servers = strings.Split(m[1], ",")
			if s := socketLine.FindStringSubmatch(r.out.String()); s != nil {
				r.socket = s[1]
			}
			if s := caLine.FindStringSubmatch(r.out.String()); s != nil {
				r.caCert = s[1]
			}
			return r
		}
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("phx dev %s ended: %v\n%s", strings.Join(args, " "), err, r.out)
		case <-deadline:
			t.Fatalf("phx dev %s printed no export line within 40s:\n%s", strings.Join(args, " "), r.out)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop interrupts phx dev (as Ctrl-C does) and waits for it to end.
func (r *devRun) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		t.Errorf("phx dev stopping: %v", err)
	}
}

// runDev runs a phx dev expected to end by itself (refused).
func runDev(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := devApp(out).RunContext(ctx, append([]string{"phx", "dev"}, args...))
	return out.String(), err
}

func devApp(out *syncBuffer) *cli.App {
	return &cli.App{Name: "phx", Commands: []*cli.Command{devCommand()}, Writer: out, ErrWriter: out}
}

// devClient calls the controllers at addrs with credentials from a dev
// cluster's auth socket.
func devClient(t *testing.T, r *devRun, addrs []string) phalanxv1.ControllerServiceClient {
	t.Helper()
	if r.caCert == "" {
		t.Fatalf("phx dev printed no PHX_CA_CERT line:\n%s", r.out)
	}
	m, err := pki.Load(pki.TrustFiles(r.caCert))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := apiclient.Dial(addrs, apiclient.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(m.ClientConfig())),
		grpc.WithPerRPCCredentials(auth.Socket(r.socket))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return phalanxv1.NewControllerServiceClient(conn)
}

// countLeaders asks each controller for its role.
func countLeaders(t *testing.T, r *devRun, addrs []string) int {
	t.Helper()
	n := 0
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := devClient(t, r, []string{a}).GetControllerStatus(ctx, &phalanxv1.GetControllerStatusRequest{})
		cancel()
		if err != nil {
			t.Fatalf("controller %s: %v", a, err)
		}
		if st.Role == "Leader" {
			n++
		}
	}
	return n
}

// buildDevBinaries builds phalanx-controller and phalanx-agent (without
// cgo, and with it for NVML, as `make build` does; without its other tags,
// which only leave unused code out), into a directory for PATH.
func buildDevBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range []struct{ name, cgo, tags string }{
		{"phalanx-controller", "0", ""}, {"phalanx-agent", "1", "no_dynamic_plugins"},
	} {
		cmd := exec.Command("go", "build", "-tags", b.tags, "-o", filepath.Join(dir, b.name), "github.com/phalanx-hpc/phalanx/cmd/"+b.name)
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+b.cgo)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b.name, err, out)
		}
	}
	return dir
}

// syncBuffer is a bytes.Buffer safe for phx dev's writes and the test's
// reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ fmt.Stringer = (*syncBuffer)(nil)

// phx dev's banner counts in words: "1 controller, 1 node", "3 controllers".
func TestCounted(t *testing.T) {
	for n, want := range map[int]string{1: "1 controller", 3: "3 controllers", 0: "0 controllers"} {
		if got := counted(n, "controller"); got != want {
			t.Errorf("counted(%d) = %q; want %q", n, got, want)
		}
	}
}
