package testcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/internal/freeport"
	"github.com/phalanx-hpc/phalanx/pki"
)

// Procs is a controller cluster of separate phalanx-controller processes,
// for faults only a process can suffer: SIGKILL, SIGSTOP, a network
// partition. Raft traffic between replicas goes through a proxy in front of
// each replica; each replica binds (and dials from) its own loopback
// address, 127.0.0.(11+i), so the proxies know who is calling and can cut
// any pair. API traffic goes straight to the replicas.
//
// With ProcOptions.FromConfig the replicas are placed the way an admin
// places them instead: by the ControllerHost lines of one phalanx.conf.
type Procs struct {
	t        testing.TB
	bin      string
	Dir      string
	Conf     string // the phalanx.conf every replica reads (FromConfig only)
	Secrets         // the cluster key and CA
	opts     ProcOptions
	Replicas []*Proc
	net      *raftNet
	agents   map[string]*agentProc
}

// ProcOptions shape a process cluster.
type ProcOptions struct {
	Replicas int // default 3
	// Dir is the state directory; default t.TempDir().
	Dir string
	// Args are added to every replica's command line; ReplicaArgs, when
	// set, adds more to replica i's.
	Args        []string
	ReplicaArgs func(i int) []string
	// Verbose sends the replicas' logs to the test log (default: to
	// Dir/ctlN.log only).
	Verbose bool
	// FromConfig starts the replicas from one shared phalanx.conf
	// (Dir/phalanx.conf, Procs.Conf) instead of --bootstrap and --peers:
	// a ControllerHost=ctlN(127.0.0.(10+N)) line each, one ControllerPort
	// and one RaftPort for all, and only --node-id, --data-dir and --listen
	// (their API addresses would clash on one host) on the command line.
	// Raft traffic then goes straight between the replicas: Partition cuts
	// nothing.
	FromConfig bool
}

// Proc is one replica process. Its addresses stay across restarts.
type Proc struct {
	ID       string
	API      string // its API, dialled directly
	raftBind string // 127.0.0.(11+i):port
	raftAdv  string // its proxy, which the others dial (FromConfig: raftBind)
	dataDir  string
	tlsDir   string // its certificate and the CA (TLSDir)

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

// BuildController builds phalanx-controller (without cgo, as released) into
// dir and returns its path.
func BuildController(t testing.TB, dir string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "phalanx-controller")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/phalanx-controller")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build phalanx-controller: %v\n%s", err, out)
	}
	return bin
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the phalanx module")
	}
	return filepath.Dir(mod), nil
}

// StartProcs starts a cluster of replica processes from the binary bin
// (BuildController), waits for a leader and registers the teardown.
func StartProcs(t testing.TB, bin string, o ProcOptions) *Procs {
	t.Helper()
	if o.Replicas == 0 {
		o.Replicas = 3
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	c := &Procs{t: t, bin: bin, Dir: o.Dir, opts: o, net: newRaftNet(o.Replicas), agents: map[string]*agentProc{}}
	c.Secrets = NewSecrets(t, o.Dir)
	t.Cleanup(c.Close)
	for i := 0; i < o.Replicas; i++ {
		id := fmt.Sprintf("ctl%d", i+1)
		c.Replicas = append(c.Replicas, &Proc{ID: id, dataDir: filepath.Join(o.Dir, id), tlsDir: c.Issue(t, pki.KindController, id)})
	}
	if o.FromConfig {
		c.placeFromConfig()
	} else {
		c.placeBehindProxies()
	}
	for i := range c.Replicas {
		c.Start(i)
	}
	if _, err := c.WaitLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// replicaIP is replica i's own loopback address.
func replicaIP(i int) string { return fmt.Sprintf("127.0.0.%d", 11+i) }

// placeBehindProxies gives each replica a free API port on 127.0.0.1, a
// Raft address on its own IP and a proxy in front of it.
func (c *Procs) placeBehindProxies() {
	for i, p := range c.Replicas {
		p.API, p.raftBind = freePort(c.t, "127.0.0.1"), freePort(c.t, replicaIP(i))
		p.raftAdv = c.net.listen(c.t, i, p.raftBind)
	}
}

// placeFromConfig writes the phalanx.conf that places every replica on its
// own IP, at ports free on all of them.
func (c *Procs) placeFromConfig() {
	var ips []string
	for i := range c.Replicas {
		ips = append(ips, replicaIP(i))
	}
	api, raft := commonFreePort(c.t, ips), commonFreePort(c.t, ips)
	var b strings.Builder
	for i, p := range c.Replicas {
		p.API, p.raftBind = net.JoinHostPort(ips[i], api), net.JoinHostPort(ips[i], raft)
		p.raftAdv = p.raftBind
		fmt.Fprintf(&b, "ControllerHost=%s(%s)\n", p.ID, ips[i])
	}
	fmt.Fprintf(&b, "ControllerPort=%s\nRaftPort=%s\n", api, raft)
	c.Conf = filepath.Join(c.Dir, "phalanx.conf")
	if err := os.WriteFile(c.Conf, []byte(b.String()), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// commonFreePort returns a port free on every one of ips.
func commonFreePort(t testing.TB, ips []string) string {
	t.Helper()
	for try := 0; try < 50; try++ {
		_, port, _ := net.SplitHostPort(freePort(t, ips[0]))
		free := true
		for _, ip := range ips[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, port))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return port
		}
	}
	t.Fatalf("no port free on all of %v", ips)
	return ""
}

func freePort(t testing.TB, ip string) string {
	t.Helper()
	addr, err := freeport.Addr(ip)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// APIAddrs are the replicas' API addresses.
func (c *Procs) APIAddrs() []string {
	var out []string
	for _, p := range c.Replicas {
		out = append(out, p.API)
	}
	return out
}

// Start starts (or restarts) replica i on its data dir and addresses.
func (c *Procs) Start(i int) {
	c.t.Helper()
	p := c.Replicas[i]
	if c.Running(i) { // a second process would fail on the data dir's lock, and the first one leak
		c.t.Fatalf("start %s: it is still running: Kill or Stop it first", p.ID)
	}
	args := append(c.placeArgs(i), c.opts.Args...)
	if c.opts.ReplicaArgs != nil {
		args = append(args, c.opts.ReplicaArgs(i)...)
	}
	logf, err := os.OpenFile(filepath.Join(c.Dir, p.ID+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if c.opts.Verbose {
		cmd.Stdout = &teeWriter{f: logf, t: c.t, prefix: p.ID + ": "}
		cmd.Stderr = cmd.Stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startProcess(cmd); err != nil { // spawn.go: from a thread that lives as long as the binary
		logf.Close()
		c.t.Fatalf("start %s: %v", p.ID, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done, p.paused = cmd, done, false
	p.mu.Unlock()
}

// TLSDir is replica i's --tls-dir: its certificate, and the CA's beside
// it as its host's users find it (ca.crt).
func (c *Procs) TLSDir(i int) string { return c.Replicas[i].tlsDir }

// placeArgs are the flags that place replica i: its identity, data dir
// and addresses, and the peers of a new cluster (or the config that says
// them).
func (c *Procs) placeArgs(i int) []string {
	p := c.Replicas[i]
	args := []string{"--node-id", p.ID, "--data-dir", p.dataDir, "--listen", p.API, "--auth-key", c.KeyFile, "--auth-socket", "", "--tls-dir", p.tlsDir}
	if c.opts.FromConfig {
		return append(args, "--config", c.Conf)
	}
	var peers, apis []string
	for _, q := range c.Replicas {
		peers = append(peers, q.ID+"="+q.raftAdv)
		if q != p {
			apis = append(apis, q.API)
		}
	}
	return append(args, "--config", os.DevNull, "--raft-addr", p.raftBind, "--raft-advertise", p.raftAdv,
		"--bootstrap", "--peers", strings.Join(peers, ","), "--peer-apis", strings.Join(apis, ","))
}

// Wipe deletes replica i's data dir, as a lost disk does. Stop or kill
// the replica first.
func (c *Procs) Wipe(i int) {
	c.t.Helper()
	if c.Running(i) {
		c.t.Fatalf("wipe %s: it is running; kill it first", c.Replicas[i].ID)
	}
	if err := os.RemoveAll(c.Replicas[i].dataDir); err != nil {
		c.t.Fatal(err)
	}
}

// Running reports whether replica i's process runs (paused or not).
func (c *Procs) Running(i int) bool {
	p := c.Replicas[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to replica i and waits for it to die.
func (c *Procs) Kill(i int) { c.signal(i, syscall.SIGKILL) }

// Stop sends SIGTERM to replica i (a clean shutdown) and waits.
func (c *Procs) Stop(i int) { c.signal(i, syscall.SIGTERM) }

// Hangup sends SIGHUP to replica i (it reads its cluster keys again) and
// returns at once.
func (c *Procs) Hangup(i int) {
	p := c.Replicas[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		p.cmd.Process.Signal(syscall.SIGHUP)
	}
}

func (c *Procs) signal(i int, sig syscall.Signal) {
	p := c.Replicas[i]
	p.mu.Lock()
	cmd, done, paused := p.cmd, p.done, p.paused
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	if paused {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// Pause stops replica i with SIGSTOP: it keeps its sockets but answers
// nothing, like a process stuck in a long GC pause or a frozen VM.
func (c *Procs) Pause(i int) { c.pause(i, true) }

// Resume continues a paused replica (SIGCONT).
func (c *Procs) Resume(i int) { c.pause(i, false) }

func (c *Procs) pause(i int, stop bool) {
	p := c.Replicas[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.paused == stop {
		return
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	p.cmd.Process.Signal(sig)
	p.paused = stop
}

// Memory is a replica's resident memory, in bytes: Anon is its own (Go
// heap, stacks, buffers), File the pages of its files mapped in (bbolt maps
// its databases; the kernel may reclaim those pages at will).
type Memory struct{ Anon, File int64 }

// RSS returns replica i's resident memory (RssAnon and RssFile).
func (c *Procs) RSS(i int) (Memory, error) {
	p := c.Replicas[i]
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	var m Memory
	if cmd == nil {
		return m, fmt.Errorf("%s is not running", p.ID)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		for key, dst := range map[string]*int64{"RssAnon:": &m.Anon, "RssFile:": &m.File} {
			if rest, ok := strings.CutPrefix(line, key); ok {
				var kb int64
				if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
					return m, fmt.Errorf("%s %q: %w", key, rest, err)
				}
				*dst = kb << 10
			}
		}
	}
	return m, nil
}

// Partition cuts the Raft links between the groups; replicas in no group
// are cut from everyone. Heal restores every link.
func (c *Procs) Partition(groups ...[]int) { c.net.partition(groups) }

// Heal restores every Raft link.
func (c *Procs) Heal() { c.net.heal() }

// Status asks replica i for its status within d.
func (c *Procs) Status(i int, d time.Duration) (*phalanxv1.ControllerStatus, error) {
	conn, err := c.Dial(c.Replicas[i].API)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return phalanxv1.NewControllerServiceClient(conn).GetControllerStatus(ctx, &phalanxv1.GetControllerStatusRequest{})
}

// Leader returns the index of a replica that reports itself leader, or -1.
func (c *Procs) Leader() int {
	for i := range c.Replicas {
		if st, err := c.Status(i, 300*time.Millisecond); err == nil && st.Role == "Leader" {
			return i
		}
	}
	return -1
}

// WaitLeader waits until a replica leads and accepts a write-path read
// (ListPartitions through any replica), and returns it.
func (c *Procs) WaitLeader(d time.Duration) (int, error) {
	conn, err := c.Dial()
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	api := phalanxv1.NewControllerServiceClient(conn)
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := api.ListPartitions(ctx, &phalanxv1.ListPartitionsRequest{})
		cancel()
		if err == nil {
			if l := c.Leader(); l >= 0 {
				return l, nil
			}
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("no leader within %v: %v (logs in %s)", d, err, c.Dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartAgents starts n node agents in this process (nodes gpu001...) with
// gpus fake GPUs each, tasks run as plain processes, talking to every
// replica. They are stopped, with their tasks, by Close.
func (c *Procs) StartAgents(n, gpus int) []string {
	c.t.Helper()
	var names []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("gpu%03d", i)
		dir := filepath.Join(c.Dir, "agents", name)
		c.agents[name] = startAgent(c.t, agentSpec{tls: c.Material(c.t, pki.KindNode, name), secrets: &c.Secrets,
			name: name, controllers: c.APIAddrs(), stateDir: dir, runtime: processRuntime(filepath.Join(dir, "process")),
			gpus: gpus, model: "NVIDIA A100-SXM4-80GB", killGrace: time.Second, log: (&Cluster{t: c.t}).logger("agent-" + name),
		})
		names = append(names, name)
	}
	return names
}

// Close stops the agents, then kills every replica and the proxies. When
// the test failed, the end of each replica's log goes to the test log.
func (c *Procs) Close() {
	if c.t.Failed() {
		for _, p := range c.Replicas {
			data, _ := os.ReadFile(filepath.Join(c.Dir, p.ID+".log"))
			if len(data) > 8000 {
				data = data[len(data)-8000:]
			}
			c.t.Logf("--- end of %s's log:\n%s", p.ID, data)
		}
	}
	for name, a := range c.agents {
		a.stop(c.t, name)
	}
	for i := range c.Replicas {
		c.Kill(i)
	}
	c.net.close()
}

// teeWriter copies a replica's output to its log file and the test log.
type teeWriter struct {
	f      *os.File
	t      testing.TB
	prefix string
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.f.Write(p)
	testWriter{w.t}.Write(append([]byte(w.prefix), p...))
	return len(p), nil
}
