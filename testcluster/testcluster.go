// Package testcluster runs a Phalanx cluster inside one test process: one
// or more controller replicas and several node agents with fake GPUs
// (go-nvml's mock, through the agent's real discovery code), on loopback
// with tight timings. Tests use it to drive whole jobs end to end and to
// inject faults: stop and restart a replica, cut a node off the network,
// stop an agent. (Faults that need separate processes, SIGKILL and SIGSTOP,
// are the chaos harness's: see chaos.go.)
package testcluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
	"github.com/phalanx-hpc/phalanx/controller"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
	"github.com/phalanx-hpc/phalanx/topology"
)

// Options shape a test cluster.
type Options struct {
	Controllers int    // replicas; default 1
	Nodes       int    // default 4
	GPUsPerNode int    // default 8
	GPUModel    string // default "NVIDIA A100-SXM4-80GB"
	LeafSize    int    // default 2
	// Runtime is "process" (default) or "fake"; NewRuntime overrides both.
	Runtime    string
	NewRuntime func(node string) (runtime.Runtime, error)
	NodeTTL    time.Duration // default 2s
	KillGrace  time.Duration // default 1s
	// AgentsKeepTasks: a stopped agent leaves its plain-process tasks
	// running, and the next agent started for its node takes them over,
	// as phalanx-agent does. By default StopAgent stops them first.
	AgentsKeepTasks bool
	// Dir is the state directory; default t.TempDir().
	Dir string
	// Partitions replace the controller's default partition (every node).
	Partitions []*cluster.Partition
	// SnapshotThreshold and TrailingLogs set the replicas' Raft snapshot
	// policy (controller.Config); zero: Raft's defaults.
	SnapshotThreshold, TrailingLogs uint64
	// DisableRootJobs, OperatorUsers and PrivateJobs: as in
	// controller.Config.
	DisableRootJobs bool
	OperatorUsers   []string
	PrivateJobs     bool
	// FeatureLevels, by replica index: the feature level that replica
	// reports (controller.Config.FeatureLevel), standing for an earlier
	// release; the others report their release's.
	FeatureLevels map[int]uint64
	// MaxArraySize is the controllers' (0: their default, 1001).
	MaxArraySize int
	// ClusterName is the controllers' (the config's ClusterName).
	ClusterName string
	RateLimit   controller.RateLimit
	// Prolog: what the agents run before a job's task (Slurm's Prolog).
	Prolog cluster.Prolog
	// Unkillable: what the agents do with a task that outlives its
	// SIGKILL (Slurm's UnkillableStepTimeout).
	Unkillable cluster.Unkillable
	// MinHangTimeout lets jobs give hang timeouts shorter than the
	// product's 10 minutes (controller.Config).
	MinHangTimeout time.Duration
	// NodeConf are phalanx.conf's NodeName lines; with any, New waits only
	// for the nodes they declare (the others are refused).
	NodeConf []config.NodeConf
	// ClientBinary is the phx binary the agents put on jobs' PATH under
	// Slurm's command names (scancel, scontrol, ...); "": srun alone.
	ClientBinary string
}

// Cluster is a running test cluster.
type Cluster struct {
	t        testing.TB
	opts     Options
	Dir      string
	Topology *topology.Tree
	Nodes    []string
	// Fake is the shared fake runtime when Options.Runtime is "fake".
	Fake *fake.Runtime

	// Secrets are the cluster key and CA; AuthSocket serves credentials
	// signed with the key to local processes (phx run as another user).
	Secrets
	AuthSocket string

	replicas []*replica
	conn     *apiclient.Conn
	// Client reaches every replica and follows the leader.
	Client phalanxv1.ControllerServiceClient

	mu     sync.Mutex
	agents map[string]*agentProc
}

// replica is one controller replica; srv is nil while it is stopped. Its
// addresses stay the same across restarts.
type replica struct {
	id       string
	tls      *pki.Material // its certificate, issued once
	srv      *controller.Server
	api      string
	raftAddr string
}

// New starts a cluster and registers its teardown with t.Cleanup. It returns
// once a leader is ready and every node has registered.
func New(t testing.TB, o Options) *Cluster {
	t.Helper()
	o = o.withDefaults(t)
	c := &Cluster{t: t, opts: o, Dir: o.Dir, agents: map[string]*agentProc{}}
	t.Cleanup(c.Close)
	c.Secrets = NewSecrets(t, o.Dir)
	c.serveAuth()
	var names []string
	c.Topology, names = topology.Generate((o.Nodes+o.LeafSize-1)/o.LeafSize, o.LeafSize, 16, "gpu")
	c.Nodes = names[:o.Nodes]
	if o.Runtime == "fake" && o.NewRuntime == nil {
		c.Fake = fake.New()
	}
	c.startReplicas(o.Controllers)
	c.serveCLI()
	for _, n := range c.Nodes {
		c.StartAgent(n)
	}
	c.WaitNodes(c.declared())
	return c
}

// declared counts the cluster's nodes that phalanx.conf would take: all
// of them without NodeName lines.
func (c *Cluster) declared() int {
	if len(c.opts.NodeConf) == 0 {
		return len(c.Nodes)
	}
	n := 0
	for _, name := range c.Nodes {
		if slices.ContainsFunc(c.opts.NodeConf, func(nc config.NodeConf) bool { return nc.Name == name }) {
			n++
		}
	}
	return n
}

func (o Options) withDefaults(t testing.TB) Options {
	if o.Controllers == 0 {
		o.Controllers = 1
	}
	if o.Nodes == 0 {
		o.Nodes = 4
	}
	if o.GPUsPerNode == 0 {
		o.GPUsPerNode = 8
	}
	if o.GPUModel == "" {
		o.GPUModel = "NVIDIA A100-SXM4-80GB"
	}
	if o.LeafSize == 0 {
		o.LeafSize = 2
	}
	if o.Runtime == "" {
		o.Runtime = "process"
	}
	if o.NodeTTL == 0 {
		o.NodeTTL = 2 * time.Second
	}
	if o.KillGrace == 0 {
		o.KillGrace = time.Second
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	return o
}

func (c *Cluster) logger(component string) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("PHX_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{c.t}, &slog.HandlerOptions{Level: level})).With("c", component)
}

// startReplicas starts n replicas: the first bootstraps alone, the others
// join through the API (phx scontrol raft add), as an admin grows a
// cluster.
func (c *Cluster) startReplicas(n int) {
	c.t.Helper()
	for i := 0; i < n; i++ {
		// Ports below the ephemeral range: a restarted replica binds its
		// old ones again, which an outgoing connection may have taken
		// meanwhile if they came from port 0.
		c.replicas = append(c.replicas, &replica{id: fmt.Sprintf("ctl%d", i), api: freePort(c.t, "127.0.0.1"), raftAddr: freePort(c.t, "127.0.0.1")})
		c.StartController(i)
		if i == 0 {
			c.waitLeader(10 * time.Second)
			c.dialClient()
			continue
		}
		r := c.replicas[i]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Client.AddController(ctx, &phalanxv1.AddControllerRequest{Id: r.id, RaftAddr: r.raftAddr, ApiAddr: r.api})
		cancel()
		if err != nil {
			c.t.Fatalf("add controller %s: %v", r.id, err)
		}
	}
	c.conn.Close()
	c.dialClient() // now with every replica's address
	c.Eventually(10*time.Second, func() error { return c.replicasCaughtUp() })
}

func (c *Cluster) dialClient() {
	var err error
	c.conn, err = c.DialAs(c.APIAddrs(), Root)
	if err != nil {
		c.t.Fatalf("dial controllers: %v", err)
	}
	c.Client = phalanxv1.NewControllerServiceClient(c.conn)
}

// APIAddrs are every replica's API address.
func (c *Cluster) APIAddrs() []string {
	var out []string
	for _, r := range c.replicas {
		out = append(out, r.api)
	}
	return out
}

// StartController starts (or restarts) replica i on its data dir and
// addresses. It does not wait for an election.
func (c *Cluster) StartController(i int) {
	c.t.Helper()
	r := c.replicas[i]
	if r.tls == nil {
		r.tls = c.Material(c.t, pki.KindController, r.id)
	}
	srv, err := controller.New(controller.Config{
		NodeID:            r.id,
		DataDir:           filepath.Join(c.Dir, "controller-"+r.id),
		RaftAddr:          r.raftAddr,
		APIAddr:           r.api,
		Bootstrap:         i == 0,
		Topology:          c.Topology,
		FastRaft:          true,
		NodeTTL:           c.opts.NodeTTL,
		HeartbeatInterval: 200 * time.Millisecond,
		SchedInterval:     200 * time.Millisecond,
		KillGrace:         c.opts.KillGrace,
		Partitions:        c.opts.Partitions,
		ClusterName:       c.opts.ClusterName,
		SnapshotThreshold: c.opts.SnapshotThreshold,
		SnapshotInterval:  200 * time.Millisecond,
		TrailingLogs:      c.opts.TrailingLogs,
		AuthKeys:          auth.Ring(c.Key),
		TLS:               r.tls,
		DisableRootJobs:   c.opts.DisableRootJobs,
		Prolog:            c.opts.Prolog,
		Unkillable:        c.opts.Unkillable,
		Nodes:             c.opts.NodeConf,
		OperatorUsers:     c.opts.OperatorUsers,
		PrivateJobs:       c.opts.PrivateJobs,
		MaxArraySize:      c.opts.MaxArraySize,
		RateLimit:         c.opts.RateLimit,
		MinHangTimeout:    c.opts.MinHangTimeout,
		FeatureLevel:      featureLevel(c.opts.FeatureLevels, i),
		Logger:            c.logger("controller-" + r.id),
	})
	if err != nil {
		c.t.Fatalf("start controller %s: %v", r.id, err)
	}
	r.srv, r.api, r.raftAddr = srv, srv.APIAddr(), srv.RaftAddr()
}

// StopController closes replica i, keeping its data dir.
func (c *Cluster) StopController(i int) {
	c.t.Helper()
	r := c.replicas[i]
	if r.srv == nil {
		return
	}
	if err := r.srv.Close(); err != nil {
		c.t.Errorf("close controller %s: %v", r.id, err)
	}
	r.srv = nil
}

// Controller returns replica i (nil while stopped).
func (c *Cluster) Controller(i int) *controller.Server { return c.replicas[i].srv }

// Leader waits for a replica that leads and is ready, and returns it.
func (c *Cluster) Leader() *controller.Server {
	c.t.Helper()
	return c.waitLeader(10 * time.Second)
}

// LeaderIndex returns the index of the ready leader.
func (c *Cluster) LeaderIndex() int {
	c.t.Helper()
	l := c.Leader()
	for i, r := range c.replicas {
		if r.srv == l {
			return i
		}
	}
	return -1
}

func (c *Cluster) waitLeader(d time.Duration) *controller.Server {
	c.t.Helper()
	var leader *controller.Server
	c.Eventually(d, func() error {
		for _, r := range c.replicas {
			if r.srv == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			err := r.srv.WaitLeader(ctx)
			cancel()
			if err == nil {
				leader = r.srv
				return nil
			}
		}
		return fmt.Errorf("no replica leads")
	})
	return leader
}

// replicasCaughtUp checks that every running replica has applied what the
// leader has.
func (c *Cluster) replicasCaughtUp() error {
	var want uint64
	for _, r := range c.replicas {
		if r.srv != nil && r.srv.IsLeader() {
			want = r.srv.Store().AppliedIndex()
		}
	}
	for _, r := range c.replicas {
		if r.srv != nil && r.srv.Store().AppliedIndex() < want {
			return fmt.Errorf("controller %s applied %d of %d", r.id, r.srv.Store().AppliedIndex(), want)
		}
	}
	return nil
}

// WaitNodes waits until n nodes have registered.
func (c *Cluster) WaitNodes(n int) {
	c.t.Helper()
	c.Eventually(10*time.Second, func() error {
		if nodes := c.Leader().Store().Nodes(); len(nodes) < n {
			return fmt.Errorf("%d of %d nodes registered", len(nodes), n)
		}
		return nil
	})
}

// Eventually retries f every 20ms until it returns nil or d passes, then
// fails the test with f's last error.
func (c *Cluster) Eventually(d time.Duration, f func() error) {
	c.t.Helper()
	Eventually(c.t, d, f)
}

// Eventually retries f until it returns nil or d passes, then fails t with
// f's last error. It is the only way tests here wait: never a bare sleep.
func Eventually(t testing.TB, d time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitJob waits until job id reaches one of the states and returns it.
func (c *Cluster) WaitJob(id uint64, d time.Duration, states ...string) *phalanxv1.Job {
	c.t.Helper()
	var job *phalanxv1.Job
	c.Eventually(d, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
		if err != nil {
			return err
		}
		job = j
		for _, s := range states {
			if j.State != s {
				continue
			}
			if st := cluster.JobState(s); st.Terminal() && !st.ComingBack() && !settled(j) {
				return fmt.Errorf("job %d is %s (%s), its tasks still stopping: it may yet restart", id, j.State, j.Reason)
			}
			return nil
		}
		return fmt.Errorf("job %d is %s (%s), want %s", id, j.State, j.Reason, strings.Join(states, " or "))
	})
	return job
}

// settled reports whether every task of j's attempt has ended: a job that
// failed while others of its tasks run is restarted, under its
// --restart-on, only once they have stopped, and shows FAILED meanwhile.
func settled(j *phalanxv1.Job) bool {
	for _, t := range j.Tasks {
		if !cluster.TaskState(t.State).Ended() {
			return false
		}
	}
	return true
}

// Close stops every agent and replica.
func (c *Cluster) Close() {
	c.mu.Lock()
	var names []string
	for n := range c.agents {
		names = append(names, n)
	}
	c.mu.Unlock()
	for _, n := range names {
		c.StopAgent(n)
	}
	if c.conn != nil {
		c.conn.Close()
	}
	for i := range c.replicas {
		c.StopController(i)
	}
}

// testWriter sends log lines to the test log, dropping them once the test
// has finished (late goroutines must not panic the run).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { recover() }()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// featureLevel is replica i's entry of levels, or nil.
func featureLevel(levels map[int]uint64, i int) *uint64 {
	if l, ok := levels[i]; ok {
		return &l
	}
	return nil
}
