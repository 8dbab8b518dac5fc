package nodeagent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Defaults for Config fields left zero.
const (
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultKillGrace         = 10 * time.Second
	// flushTimeout bounds how long Run, when stopping, keeps trying to
	// deliver the final reports of the tasks it stopped.
	flushTimeout = 5 * time.Second
)

// Config is what an agent needs to know about its node and controller.
type Config struct {
	Name string // node name, as the controller knows it
	Addr string // address peers use to reach this node (MASTER_ADDR)
	// Controllers are the controllers' API addresses (host:port); the
	// agent follows whichever leads.
	Controllers []string
	// DialOptions are added to the connections to the controllers
	// (credentials; tests route them through a link they can cut).
	DialOptions []grpc.DialOption
	StateDir    string // job scripts go under <StateDir>/jobs
	Runtime     runtime.Runtime
	GPUs        []gpu.Device
	// NICs are the node's RDMA ports (package rdma), registered with the
	// node and watched by NICWatcher (nil: not watched) for link faults.
	NICs       []rdma.Port
	NICWatcher NICWatcher
	// RDMADevices are the CDI names of the node's RDMA devices
	// (rdma.CDIDevice), which every container task gets.
	RDMADevices []string
	// GPUWatcher watches GPUs for faults (nil: not watched).
	GPUWatcher GPUWatcher
	// NodeChecks are the built-in checks of disk, /dev/shm and memlock
	// (nil: none).
	NodeChecks *NodeChecks
	// HealthCheckTimeout bounds one run of the health program
	// (cluster.HealthCheckTimeout if zero).
	HealthCheckTimeout time.Duration
	CPUs               int
	MemoryMB           int64
	Features           []string
	// ClientBinary is the phx client; a job finds it on its PATH under
	// Slurm's command names (scontrol, squeue, ...), and a container job
	// the whole CLI installed with it, phx-full (wholeClient). "": srun
	// alone.
	// AuthSocket and CACert are the node's credential socket and cluster
	// CA bundle, which the client in a container job is given
	// (incontainer.go); "": none.
	ClientBinary       string
	AuthSocket, CACert string
	// ClusterName is exported as SLURM_CLUSTER_NAME; empty: the
	// controllers' ClusterName, learnt when the node registers.
	ClusterName string
	// HeartbeatInterval is the longest time between heartbeats; a shorter
	// interval asked for by the controller wins.
	HeartbeatInterval time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL when an assignment
	// gives none.
	KillGrace time.Duration
	// CheckpointRoot holds the tasks' node-local checkpoint directories
	// (ckpt.go); default <StateDir>/ckpt. CheckpointRate bounds the copy of
	// one step to a store, in bytes per second (0: unlimited);
	// CheckpointPoll is how often committed steps are looked for
	// (DefaultCheckpointPoll if zero).
	CheckpointRoot string
	CheckpointRate int64
	CheckpointPoll time.Duration
	// GPUBusy reports whether any of the GPUs (host indices) is busy, by
	// NVML's utilisation: progress for hang detection (hang.go). nil: GPUs
	// do not count.
	GPUBusy func(gpus []int) bool
	// StopTasksOnExit stops the tasks when Run returns. Otherwise tasks
	// whose runtime can hand them over to the agent's next run
	// (runtime.Recoverer) keep running, and the next run takes them over.
	StopTasksOnExit bool
	// TLS is the node's certificate material, whose CA bundle checks the
	// step credentials of steps started from outside a job (step.go);
	// nil (--insecure): they are not checked.
	TLS    *pki.Material
	Clock  Clock
	Logger *slog.Logger
}

// Agent runs one node's tasks as the controller assigns them.
type Agent struct {
	cfg    Config
	log    *slog.Logger
	client phalanxv1.NodeServiceClient
	rep    *reporter
	conn   atomic.Pointer[apiclient.Conn] // while Run runs
	// clusterName is the controllers' ClusterName, as the last
	// registration answered.
	clusterName atomic.Pointer[string]

	mu       sync.Mutex
	tasks    map[taskKey]*task      // started or starting, not yet ended
	finished map[taskKey]*ended     // ended here; never started again
	last     *phalanxv1.Assignments // the set reconciled last
	waiting  map[taskKey]bool       // tasks of last that wait for another to end
	stopping bool                   // Run is returning: launch nothing more
	// sessionOver is closed once Run stops talking to the controllers: no
	// heartbeat will acknowledge anything any more.
	sessionOver chan struct{}
	// healthCheck is the health program's settings, as the controller last
	// sent them; drained whether the node was drained then.
	healthCheck cluster.HealthCheck
	drained     bool
	unkillable  cluster.Unkillable // as the controller last sent it (unkillable.go)
	// healthCheckChanged wakes the health program's runner.
	healthCheckChanged chan struct{}
	// leftover holds the attempts whose folders an earlier run of the
	// agent left (leftover.go): their tasks are reported LOST, not started.
	leftover map[attemptKey]bool
	taskWG   sync.WaitGroup
	// usedSteps are the step credentials used, when (step.go).
	usedSteps map[string]time.Time
	// health is what the heartbeats carry of the node's health
	// (healthstate.go).
	health *healthState
}

// taskKey names one task: a rank of an attempt of a job.
type taskKey struct {
	job     uint64
	attempt int32
	rank    int32
}

func (k taskKey) String() string { return fmt.Sprintf("%d.%d rank %d", k.job, k.attempt, k.rank) }

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Agent, error) {
	switch {
	case cfg.Name == "":
		return nil, cluster.Errorf(cluster.ErrInvalid, "agent: empty node name")
	case len(cfg.Controllers) == 0:
		return nil, cluster.Errorf(cluster.ErrInvalid, "agent %s: no controller address", cfg.Name)
	case cfg.StateDir == "":
		return nil, cluster.Errorf(cluster.ErrInvalid, "agent %s: no state directory", cfg.Name)
	case cfg.Runtime == nil:
		return nil, cluster.Errorf(cluster.ErrInvalid, "agent %s: no runtime", cfg.Name)
	case cfg.HeartbeatInterval < 0 || cfg.KillGrace < 0:
		return nil, cluster.Errorf(cluster.ErrInvalid, "agent %s: negative heartbeat interval or kill grace", cfg.Name)
	case cfg.CPUs < 0 || cfg.MemoryMB < 0:
		return nil, cluster.Errorf(cluster.ErrInvalid, "agent %s: negative CPUs (%d) or memory (%d MB) to register: give 0 to detect them", cfg.Name, cfg.CPUs, cfg.MemoryMB)
	case cfg.CheckpointRate < 0:
		return nil, cluster.Errorf(cluster.ErrInvalid, "agent %s: negative checkpoint rate %d: give bytes per second, or 0 for no bound", cfg.Name, cfg.CheckpointRate)
	}
	if cfg.CheckpointRoot == "" {
		cfg.CheckpointRoot = filepath.Join(cfg.StateDir, "ckpt")
	}
	if cfg.CheckpointPoll <= 0 {
		cfg.CheckpointPoll = DefaultCheckpointPoll
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Agent{
		cfg:         cfg,
		log:         cfg.Logger.With("node", cfg.Name),
		tasks:       make(map[taskKey]*task),
		finished:    make(map[taskKey]*ended),
		health:      newHealthState(cfg.NICs),
		sessionOver: make(chan struct{}),

		healthCheckChanged: make(chan struct{}, 1),
	}, nil
}

// Reconnect drops the connections to the controllers; the agent dials
// again, and watches its assignments again, at once. The daemon calls it
// when its certificate was renewed: a connection keeps the certificate it
// was made with, which the controllers refuse once it is revoked or
// expired.
func (a *Agent) Reconnect() {
	if c := a.conn.Load(); c != nil {
		a.log.Info("reconnecting to the controllers (TLS files reloaded)")
		c.Reset()
	}
}

// Run registers the node, heartbeats, watches assignments and runs tasks
// until ctx ends. It never gives up on an unreachable controller while ctx
// lives. Before all that it takes over the tasks an earlier run left
// running (adopt.go) and kills what it cannot account for (leftover.go).
// When ctx ends it lets go of its tasks for its next run, or stops them
// (SIGTERM, the grace period, SIGKILL: stopAll), tries for a few seconds
// to deliver its reports, and returns nil. It returns an error only when
// it cannot start at all.
func (a *Agent) Run(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(a.cfg.StateDir, "jobs"), 0o755); err != nil {
		return fmt.Errorf("agent %s: state directory: %w", a.cfg.Name, err)
	}
	conn, err := apiclient.Dial(a.cfg.Controllers, apiclient.WithDialOptions(a.cfg.DialOptions...))
	if err != nil {
		return fmt.Errorf("agent %s: controllers %q: %w", a.cfg.Name, a.cfg.Controllers, err)
	}
	defer conn.Close()
	a.conn.Store(conn)
	defer a.conn.Store(nil)
	a.client = phalanxv1.NewNodeServiceClient(conn)
	a.rep = newReporter(a.client, a.cfg.Clock, a.log)

	repCtx, cancelRep := context.WithCancel(context.Background())
	defer cancelRep()
	repDone := make(chan struct{})
	go func() { defer close(repDone); a.rep.run(repCtx) }()
	left := a.cleanLeftovers(a.adopt())
	a.mu.Lock()
	a.leftover = left
	a.mu.Unlock()

	a.log.Info("agent starting", "controllers", a.cfg.Controllers, "runtime", a.cfg.Runtime.Name(),
		"gpus", len(a.cfg.GPUs), "cpus", a.cfg.CPUs, "memory_mb", a.cfg.MemoryMB)
	healthCtx, stopHealth := context.WithCancel(ctx)
	healthDone := make(chan struct{})
	go func() { defer close(healthDone); a.watchNICs(healthCtx) }()
	gpuDone := make(chan struct{})
	go func() { defer close(gpuDone); a.watchGPUs(healthCtx) }()
	programDone := make(chan struct{})
	go func() { defer close(programDone); a.runHealthProgram(healthCtx) }()
	checksDone := make(chan struct{})
	go func() { defer close(checksDone); a.runNodeChecks(healthCtx) }()
	a.session(ctx)
	close(a.sessionOver)
	a.sayShuttingDown()
	stopHealth()
	<-healthDone
	<-gpuDone
	<-programDone
	<-checksDone

	a.stopAll()
	a.rep.close()
	select {
	case <-repDone:
	case <-a.cfg.Clock.After(flushTimeout):
		a.log.Warn("controller unreachable; final task reports lost", "pending", a.rep.pending())
		cancelRep()
		<-repDone
	}
	a.log.Info("agent stopped")
	return nil
}

// stopAll lets go of every task, leaving it running for the next run of
// the agent, when the runtime can hand it over (adopt.go) and
// Config.StopTasksOnExit is not set; else it stops every task. Either way
// it waits for every task's goroutine to end. Tasks stopped, and those not
// started yet, are reported LOST, not KILLED: the agent going away is no
// fault of the job's.
func (a *Agent) stopAll() {
	a.mu.Lock()
	a.stopping = true
	a.mu.Unlock()
	const msg = "node agent shut down"
	if _, ok := a.cfg.Runtime.(runtime.Recoverer); ok && !a.cfg.StopTasksOnExit {
		a.mu.Lock()
		for _, t := range a.tasks {
			t.stop(stopRequest{state: cluster.TaskLost, detach: true, msg: msg, shutdown: true})
		}
		a.mu.Unlock()
	} else {
		r := a.lostStop(msg)
		r.shutdown = true
		a.stopRunning(r)
	}
	a.taskWG.Wait()
}

// lostStop asks a task to stop (SIGTERM, the grace period, SIGKILL) and
// be reported LOST with msg.
func (a *Agent) lostStop(msg string) stopRequest {
	return stopRequest{state: cluster.TaskLost, grace: a.cfg.KillGrace, msg: msg}
}

// stopRunning stops every task that runs now as r asks (SIGTERM, the
// grace period, SIGKILL), and waits for them to end. A task already being
// stopped keeps its first stop request.
func (a *Agent) stopRunning(r stopRequest) {
	a.mu.Lock()
	tasks := make([]*task, 0, len(a.tasks))
	for _, t := range a.tasks {
		t.stop(r)
		tasks = append(tasks, t)
	}
	a.mu.Unlock()
	for _, t := range tasks {
		<-t.done
	}
}
