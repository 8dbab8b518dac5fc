package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/internal/cliwire"
)

// The CLI server's tests play phx's side with cliwire.Call, as cmd/phx
// does, against a Server on a temporary socket whose controller is a
// fakeController that checks each call's credential with the cluster key
// and records who it names.

type servedCluster struct {
	fake   *fakeController
	addr   string
	socket string
	stop   func()
	keys   *auth.Keyring

	mu      sync.Mutex
	callers []auth.Identity // whom each call's credential named
}

func startServed(t *testing.T, opts ...func(*Server)) *servedCluster {
	return startServedTB(t, opts...)
}

func startServedTB(t testing.TB, opts ...func(*Server)) *servedCluster {
	t.Helper()
	key, err := auth.WriteNewKey(filepath.Join(t.TempDir(), "auth.key"))
	if err != nil {
		t.Fatal(err)
	}
	keys := auth.Ring(key)
	sc := &servedCluster{keys: keys}
	sc.fake, _ = startFake(t)
	sc.fake.jobs = append(sc.fake.jobs, &phalanxv1.Job{Id: 42, State: "RUNNING",
		Spec: &phalanxv1.JobSpec{Name: "x", User: "alice", Partition: "gpu", Nodes: 1}})
	check := func(ctx context.Context) error {
		id, err := keys.Verify(auth.Incoming(ctx), time.Now())
		if err != nil {
			return status.Error(codes.Unauthenticated, err.Error())
		}
		sc.mu.Lock()
		sc.callers = append(sc.callers, id)
		sc.mu.Unlock()
		return nil
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := check(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}))
	phalanxv1.RegisterControllerServiceServer(srv, sc.fake)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	sc.addr = lis.Addr().String()

	s, err := NewServer([]string{sc.addr}, "", true, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.ConfigPath = filepath.Join(t.TempDir(), "no-such.conf")
	for _, o := range opts {
		o(s)
	}
	sc.socket = filepath.Join(t.TempDir(), cliwire.SocketName)
	if sc.stop, err = ServeCLI(sc.socket, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.stop)
	return sc
}

// env is what phx passes for this cluster, plus extra.
func (sc *servedCluster) env(extra ...string) []string {
	return append([]string{"PHX_SERVER=" + sc.addr, "PHX_INSECURE=1", "HOME=/home/x"}, extra...)
}

type servedRun struct {
	code           int
	err            error
	stdout, stderr string
	asked          []string // the files the server had phx read
}

// run has the server run args in dir, as cmd/phx would; readFile stands
// for the caller's os.ReadFile (nil: os.ReadFile).
func (sc *servedCluster) run(t *testing.T, dir string, env []string, stdin string, readFile func(string) ([]byte, error), args ...string) servedRun {
	t.Helper()
	c, err := net.Dial("unix", sc.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if readFile == nil {
		readFile = os.ReadFile
	}
	var r servedRun
	var stdout, stderr bytes.Buffer
	req := &cliwire.Request{Version: cliwire.Version, Args: args, Env: env, Dir: dir}
	r.code, r.err = cliwire.Call(c, req, cliwire.Local{
		Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr,
		ReadFile: func(p string) ([]byte, error) {
			r.asked = append(r.asked, p)
			return readFile(p)
		},
	})
	r.stdout, r.stderr = stdout.String(), stderr.String()
	return r
}

func TestDefaultAuthSocketIsAuths(t *testing.T) {
	if cliwire.DefaultAuthSocket != auth.DefaultSocket {
		t.Errorf("cliwire.DefaultAuthSocket %q, auth.DefaultSocket %q: phx would look for the CLI socket elsewhere than beside the auth socket", cliwire.DefaultAuthSocket, auth.DefaultSocket)
	}
}

func TestServedSbatch(t *testing.T) {
	sc := startServed(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n#SBATCH -J on-disk\nhostname\n"), 0o644)
	// What the server submits is what the caller read: a script the
	// server opened itself would be the one on disk.
	caller := func(p string) ([]byte, error) {
		if p == script {
			return []byte("#!/bin/sh\n#SBATCH -J as-read-by-phx\nhostname\n"), nil
		}
		return os.ReadFile(p)
	}
	r := sc.run(t, dir, sc.env("USER=mallory", "LR=0.1"), "", caller, "phx", "sbatch", "--parsable", "job.sh")
	if r.err != nil || r.code != 0 || r.stdout != "42\n" || r.stderr != "" {
		t.Fatalf("phx sbatch --parsable job.sh: code %d err %v stdout %q stderr %q", r.code, r.err, r.stdout, r.stderr)
	}
	if !contains(r.asked, script) {
		t.Errorf("the server did not have phx read %s (asked: %q)", script, r.asked)
	}
	sc.fake.mu.Lock()
	spec := sc.fake.submits[len(sc.fake.submits)-1].Spec
	sc.fake.mu.Unlock()
	me := strconv.Itoa(os.Getuid())
	if spec.Name != "as-read-by-phx" || spec.WorkDir != dir || strconv.Itoa(int(spec.Uid)) != me {
		t.Errorf("submitted name %q workdir %q uid %d, want as-read-by-phx, %s, %s", spec.Name, spec.WorkDir, spec.Uid, dir, me)
	}
	if !contains(spec.Environment, "LR=0.1") {
		t.Errorf("the caller's environment is not the job's: %q", spec.Environment)
	}
	// The credential names the uid the kernel reported, not $USER.
	sc.mu.Lock()
	got := sc.callers[len(sc.callers)-1]
	sc.mu.Unlock()
	if strconv.Itoa(int(got.UID)) != me || got.User == "mallory" {
		t.Errorf("the call's credential names %+v, want uid %s", got, me)
	}

	// Through a sbatch link, the script on stdin.
	r = sc.run(t, dir, sc.env(), "#!/bin/sh\n#SBATCH -J from-stdin\ntrue\n", nil, "/usr/local/bin/sbatch")
	if r.code != 0 || r.stdout != "Submitted batch job 42\n" {
		t.Fatalf("sbatch < script: code %d err %v stdout %q stderr %q", r.code, r.err, r.stdout, r.stderr)
	}
	sc.fake.mu.Lock()
	spec = sc.fake.submits[len(sc.fake.submits)-1].Spec
	sc.fake.mu.Unlock()
	if spec.Name != "from-stdin" {
		t.Errorf("stdin script submitted as %q", spec.Name)
	}
}

// TestServedMatchesDirect: the served command prints what phx-full prints
// for the same request, errors and exit status included.
func TestServedMatchesDirect(t *testing.T) {
	sc := startServed(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.sh"), []byte("#!/bin/sh\nhostname\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.sh"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "blank.sh"), []byte("\n \n"), 0o644)
	for _, args := range [][]string{
		{"phx", "sbatch", "job.sh"},
		{"phx", "sbatch", "missing.sh"},
		{"phx", "sbatch"}, // an empty script on standard input
		{"phx", "sbatch", "empty.sh"},
		{"phx", "sbatch", "blank.sh"},
		{"phx", "sbatch", "-p", "nope", "job.sh"},
		{"phx", "sbatch", "--bogus", "job.sh"},
		{"phx", "sbatch", "--test-only", "job.sh"},
		{"phx", "squeue", "-h", "-o", "%i %P %j %u %T"},
		{"phx", "squeue", "-t", "bogus"},
		{"phx", "sinfo", "--help"},
		{"phx", "scancel", "7"},
		{"phx", "scancel", "999"},
		{"phx", "sacct", "-X", "-j", "7", "-o", "JobID,JobName,User,State"},
		{"phx", "sacct", "--bogus"},
	} {
		served := sc.run(t, dir, sc.env(), "", nil, args...)
		if served.err != nil {
			t.Errorf("%q: %v", args, served.err)
			continue
		}
		// phx-full in this process, with the same request.
		var stdout, stderr bytes.Buffer
		sys := OSSystem()
		sys.Stdout, sys.Stderr, sys.Stdin = &stdout, &stderr, strings.NewReader("")
		env := envOf(sc.env("PHX_TOKEN=" + tokenFor(t, sc)))
		sys.Getenv = env
		sys.Environ = func() []string { return sc.env() }
		sys.Getwd = func() (string, error) { return dir, nil }
		sys.CacheDir = nil
		sys.ConfigPath = filepath.Join(dir, "no-such.conf")
		code := Run(context.Background(), sys, args)
		if served.code != code || served.stdout != stdout.String() || served.stderr != stderr.String() {
			t.Errorf("%q\nserved: %d %q %q\ndirect: %d %q %q", args, served.code, served.stdout, served.stderr, code, stdout.String(), stderr.String())
		}
	}
}

// tokenFor is a credential for this process's user, as the auth socket
// would give it.
func tokenFor(t *testing.T, sc *servedCluster) string {
	t.Helper()
	id := auth.Identity{User: userOf(auth.Identity{UID: uint32(os.Getuid())}).Username, UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Kind: auth.KindLocal}
	tok, err := auth.Issue(sc.keys.Signing(), id, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestServerDeclines(t *testing.T) {
	sc := startServed(t)
	dir := t.TempDir()
	for _, c := range []struct {
		why  string
		dir  string
		env  []string
		args []string
	}{
		{"PHX_TOKEN", dir, sc.env("PHX_TOKEN=t"), []string{"phx", "squeue"}},
		{"another cluster", dir, []string{"PHX_SERVER=127.0.0.1:1", "PHX_INSECURE=1"}, []string{"phx", "squeue"}},
		{"TLS where the server is plaintext", dir, []string{"PHX_SERVER=" + sc.addr}, []string{"phx", "squeue"}},
		{"not served: srun", dir, sc.env(), []string{"phx", "srun", "true"}},
		{"not served: an srun link", dir, sc.env(), []string{"/usr/bin/srun", "sbatch"}},
		{"global options", dir, sc.env(), []string{"phx", "--server", sc.addr, "squeue"}},
		{"relative directory", "rel", sc.env(), []string{"phx", "squeue"}},
	} {
		r := sc.run(t, c.dir, c.env, "", nil, c.args...)
		if !errors.Is(r.err, cliwire.ErrFallback) || r.stdout != "" || r.stderr != "" {
			t.Errorf("%s: %v, stdout %q stderr %q; want ErrFallback and nothing printed", c.why, r.err, r.stdout, r.stderr)
		}
	}
	// Arguments and environment over cliwire.MaxRequest: not sent.
	big := sc.run(t, dir, sc.env("HUGE="+strings.Repeat("x", cliwire.MaxRequest)), "", nil, "phx", "squeue")
	if !errors.Is(big.err, cliwire.ErrFallback) || big.stdout != "" {
		t.Errorf("a request over MaxRequest: %v, stdout %q; want ErrFallback", big.err, big.stdout)
	}
	// The server itself refuses one, from a client that does not check:
	// it closes the connection at the header, without reading on.
	raw, err := net.Dial("unix", sc.socket)
	if err != nil {
		t.Fatal(err)
	}
	raw.Write([]byte{cliwire.KindRequest, 0x00, 0x40, 0x00, 0x01}) // 4 MiB + 1
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := raw.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a header over MaxRequest: read %d bytes, %v; want the connection closed", n, err)
	}
	raw.Close()
	// Another protocol version.
	c, err := net.Dial("unix", sc.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = cliwire.Call(c, &cliwire.Request{Version: cliwire.Version + 1, Args: []string{"phx", "squeue"}, Env: sc.env(), Dir: dir},
		cliwire.Local{Stdout: io.Discard, Stderr: io.Discard})
	if !errors.Is(err, cliwire.ErrFallback) {
		t.Errorf("version %d: %v, want ErrFallback", cliwire.Version+1, err)
	}
}

// TestServedCallerGone: when phx goes away (Ctrl-C), its command stops;
// the server's stop does not wait on it.
func TestServedCallerGone(t *testing.T) {
	sc := startServed(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.sh"), []byte("#!/bin/sh\ntrue\n"), 0o644)
	c, err := net.Dial("unix", sc.socket)
	if err != nil {
		t.Fatal(err)
	}
	req := &cliwire.Request{Version: cliwire.Version, Args: []string{"phx", "sbatch", "--wait", "job.sh"}, Env: sc.env(), Dir: dir}
	cliwire.WriteFrame(c, cliwire.KindRequest, req.Marshal())
	// Serve the file asks until the job is submitted; job 42 runs, so
	// --wait polls on.
	for {
		kind, payload, err := cliwire.ReadFrame(c)
		if err != nil {
			t.Fatal(err)
		}
		if kind == cliwire.KindReadFile {
			answerFile(c, string(payload))
			continue
		}
		if kind == cliwire.KindStdout && strings.Contains(string(payload), "42") {
			break
		}
		if kind == cliwire.KindExit {
			t.Fatalf("sbatch --wait ended before the job did")
		}
	}
	c.Close()
	stopped := make(chan struct{})
	go func() { sc.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the server still runs sbatch --wait 10 s after its phx went away")
	}
}

// answerFile answers the server's ask for path as phx does.
func answerFile(c net.Conn, path string) {
	data, err := os.ReadFile(path)
	answer := append([]byte{cliwire.FileOK}, data...)
	if err != nil {
		answer = cliwire.FileAnswer(err)
	}
	cliwire.WriteFrame(c, cliwire.KindFile, answer)
}

// TestServedSaysItRuns: a command that runs long and prints nothing
// (sbatch --wait on a job that runs on) still has the server tell its phx,
// every AliveInterval, that it runs; the first word, before anything of
// the command, says it began.
func TestServedSaysItRuns(t *testing.T) {
	sc := startServed(t, func(s *Server) { s.AliveInterval = 20 * time.Millisecond })
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.sh"), []byte("#!/bin/sh\ntrue\n"), 0o644)
	c, err := net.Dial("unix", sc.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := &cliwire.Request{Version: cliwire.Version, Args: []string{"phx", "sbatch", "--wait", "job.sh"}, Env: sc.env(), Dir: dir}
	cliwire.WriteFrame(c, cliwire.KindRequest, req.Marshal())
	submitted, alive := false, 0
	for frames := 0; alive < 5; frames++ {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		kind, payload, err := cliwire.ReadFrame(c)
		if err != nil {
			t.Fatalf("after %d frames (%d alive since the submit): %v", frames, alive, err)
		}
		if frames == 0 && kind != cliwire.KindAlive {
			t.Fatalf("first frame %q, want %q", kind, cliwire.KindAlive)
		}
		switch kind {
		case cliwire.KindReadFile:
			answerFile(c, string(payload))
		case cliwire.KindStdout:
			submitted = submitted || strings.Contains(string(payload), "42")
		case cliwire.KindAlive:
			if submitted {
				alive++
			}
		case cliwire.KindExit:
			t.Fatalf("sbatch --wait ended before the job did")
		}
	}
}

func TestServedConcurrently(t *testing.T) {
	sc := startServed(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.sh"), []byte("#!/bin/sh\ntrue\n"), 0o644)
	before := len(sc.fake.submits)
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := sc.run(t, dir, sc.env(), "", nil, "phx", "sbatch", "--parsable", "job.sh")
			if r.err != nil || r.code != 0 || r.stdout != "42\n" {
				errs <- fmt.Sprintf("code %d err %v stdout %q stderr %q", r.code, r.err, r.stdout, r.stderr)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	sc.fake.mu.Lock()
	defer sc.fake.mu.Unlock()
	if n := len(sc.fake.submits) - before; n != 20 {
		t.Errorf("%d submits reached the controller, want 20", n)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// BenchmarkServedSbatch: one served `phx sbatch --parsable job.sh`, the
// caller's side included, against the in-process fake controller.
func BenchmarkServedSbatch(b *testing.B) {
	sc := startServedTB(b)
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "job.sh"), []byte("#!/bin/sh\n#SBATCH -N 1\ntrue\n"), 0o644)
	env := sc.env()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("unix", sc.socket)
		if err != nil {
			b.Fatal(err)
		}
		req := &cliwire.Request{Version: cliwire.Version, Args: []string{"phx", "sbatch", "--parsable", "job.sh"}, Env: env, Dir: dir}
		code, err := cliwire.Call(c, req, cliwire.Local{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, ReadFile: os.ReadFile})
		c.Close()
		if err != nil || code != 0 {
			b.Fatal(code, err)
		}
	}
}

func TestFrontOf(t *testing.T) {
	root := t.TempDir()
	bin, libexec := filepath.Join(root, "usr", "bin"), filepath.Join(root, "usr", "libexec", "phalanx")
	os.MkdirAll(bin, 0o755)
	os.MkdirAll(libexec, 0o755)
	full := filepath.Join(libexec, "phx-full")
	if got := frontOf(full); got != full {
		t.Errorf("no phx installed: %s, want phx-full itself", got)
	}
	os.WriteFile(filepath.Join(bin, "phx"), nil, 0o755)
	if got, want := frontOf(full), filepath.Join(bin, "phx"); got != want {
		t.Errorf("libexec layout: %s, want %s", got, want)
	}
	os.WriteFile(filepath.Join(libexec, "phx"), nil, 0o755)
	if got, want := frontOf(full), filepath.Join(libexec, "phx"); got != want {
		t.Errorf("side by side: %s, want %s", got, want)
	}
	if got := frontOf("/opt/x/phx"); got != "/opt/x/phx" {
		t.Errorf("phx itself: %s", got)
	}
}

// Times are read and shown in the caller's time zone ($TZ), not the
// daemon's: sbatch --test-only's expected start (the fake answers testNow).
func TestServedTimeZone(t *testing.T) {
	sc := startServed(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.sh"), []byte("#!/bin/sh\ntrue\n"), 0o644)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no zoneinfo for Asia/Tokyo here")
	}
	for _, c := range []struct {
		tz  string
		loc *time.Location
	}{{"TZ=Asia/Tokyo", tokyo}, {"TZ=:Asia/Tokyo", tokyo}, {"TZ=", time.UTC}, {"TZ=Nowhere/Atlantis", time.UTC},
		{"TZ=/tz/of/the/caller", tokyo}} {
		// A TZ naming a file is read by the caller (the path exists
		// only for it): Tokyo's zone.
		caller := func(p string) ([]byte, error) {
			if p == "/tz/of/the/caller" {
				p = "/usr/share/zoneinfo/Asia/Tokyo"
			}
			return os.ReadFile(p)
		}
		if _, err := os.Stat("/usr/share/zoneinfo/Asia/Tokyo"); err != nil && c.tz == "TZ=/tz/of/the/caller" {
			continue
		}
		r := sc.run(t, dir, sc.env(c.tz), "", caller, "phx", "sbatch", "--test-only", "job.sh")
		want := testNow.In(c.loc).Format(timeLayout)
		if r.code != 0 || !strings.Contains(r.stderr, "expected start "+want) {
			t.Errorf("%s: code %d, stderr %q; want the start shown as %s", c.tz, r.code, r.stderr, want)
		}
	}
}
