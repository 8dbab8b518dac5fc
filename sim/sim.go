package sim

import (
	"context"
	"io"
	"math/rand/v2"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
	"github.com/phalanx-hpc/phalanx/topology"
)

// Epoch is virtual time zero: submit offsets count from it.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Defaults for Config's zero values.
const (
	DefaultPassInterval = 30 * time.Second
	DefaultPreemptGrace = 60 * time.Second
	DefaultRepair       = 4 * time.Hour
	DefaultMaxRestarts  = 3
	// DefaultSwitchWait is how long --switches=N waits without @T; it is
	// set in the scheduler's Options so both sides agree.
	DefaultSwitchWait = 5 * time.Minute
)

// Config is the simulated cluster and how the simulation runs.
type Config struct {
	Tree  *topology.Tree
	Nodes []*cluster.Node // copied: Run does not change them
	// Partitions; nil means DefaultPartitions. A partition a job names that
	// is not here is added over all nodes, UP, tier 0, not preemptible.
	Partitions []*cluster.Partition

	PassInterval time.Duration // zero: DefaultPassInterval
	PreemptGrace time.Duration // zero: DefaultPreemptGrace; negative: none
	FailRate     float64       // node failures per node-hour; 0: none
	Repair       time.Duration // how long a failed node stays DOWN; zero: DefaultRepair
	Seed         uint64        // for node failures
	// MaxRestarts is every job's restart policy (cluster.RestartPolicy,
	// restarting on node failures): how many attempts may follow the first
	// before a node failure ends the job NODE_FAIL (the product's default,
	// 3, when zero; negative: never restarted). As in the product, every
	// requeue counts, preemptions included.
	MaxRestarts int
	// IdlePasses runs a pass every PassInterval while jobs are pending even
	// when nothing changed since the last one. Schedule is a pure function
	// of the state and the time, so such a pass can only differ through
	// time-dependent rules; the expiry of --switches waits, the one the
	// simulator knows of, always gets its own passes.
	IdlePasses bool

	// Options are passed to every pass (Snapshot.Options); a zero
	// DefaultSwitchWait becomes DefaultSwitchWait.
	Options scheduler.Options

	// Clock times each Schedule call; nil leaves pass times at zero (tests).
	Clock func() time.Time
	// Progress, when set, gets a line now and then.
	Progress io.Writer
}

// DefaultPartitions is "gpu" over every node, tier 1, and "scavenger" over
// every node, tier 0, whose jobs may be preempted (requeued).
func DefaultPartitions() []*cluster.Partition {
	return []*cluster.Partition{
		{Name: DefaultPartition, AllNodes: true, Default: true, State: cluster.PartitionUp, PriorityTier: 1, PreemptMode: cluster.PreemptOff},
		{Name: PreemptPartition, AllNodes: true, State: cluster.PartitionUp, PriorityTier: 0, PreemptMode: cluster.PreemptRequeue},
	}
}

// simJob is a job and what the simulator tracks about it.
type simJob struct {
	job      *cluster.Job
	spec     *JobSpec
	duration time.Duration

	pendSlot, runSlot int
	rejected          string // why the job could never run; it is not queued
	started           bool
	firstStart        time.Time
	lastStart         time.Time
	gpuSeconds        float64
	leaves, minLeaves int
	backfilled        bool
	requeues          int
	held              *cluster.Allocation // what the attempt holds, until its tasks have ended
	ended             bool                // counted as ended (COMPLETED, TIMEOUT, NODE_FAIL)
}

// sim is the state of one run.
type sim struct {
	cfg     Config
	nodes   []*cluster.Node
	nodeIdx map[string]int
	held    *cluster.Holdings // what live jobs hold: the store's placement check
	onNode  [][]*simJob       // per node, jobs holding it
	leafCap leafCapacity

	jobs              []*simJob // by ID-1
	pending, running  jobSet
	events            eventQueue
	arrivalsLeft      int
	down              int
	nextTick          time.Time
	failArmed         bool
	failRNG           *rand.Rand
	snapJobs          []*cluster.Job
	preempting        map[cluster.JobID]bool // victims in their grace period
	passTimes         []time.Duration
	lastEnd           time.Time
	preemptions       int
	nodeFailures      int
	finished, placedN int
}

// Run simulates the workload on the configured cluster and returns what
// happened. It fails on an invalid configuration or when the scheduler
// returns a plan that cannot be applied. ctx stops a long run early.
func Run(ctx context.Context, cfg Config, specs []JobSpec) (*Result, error) {
	s, err := newSim(cfg, specs)
	if err != nil {
		return nil, err
	}
	if err := s.loop(ctx); err != nil {
		return nil, err
	}
	return s.result(), nil
}

func newSim(cfg Config, specs []JobSpec) (*sim, error) {
	if len(cfg.Nodes) == 0 {
		return nil, cluster.Errorf(cluster.ErrInvalid, "simulated cluster has no nodes")
	}
	cfg = withDefaults(cfg)
	s := &sim{cfg: cfg, nodes: make([]*cluster.Node, len(cfg.Nodes)), nodeIdx: make(map[string]int, len(cfg.Nodes)),
		onNode:  make([][]*simJob, len(cfg.Nodes)),
		failRNG: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), preempting: map[cluster.JobID]bool{}}
	for i, n := range cfg.Nodes {
		n = n.Clone()
		s.nodes[i] = n
		if _, dup := s.nodeIdx[n.Name]; dup {
			return nil, cluster.Errorf(cluster.ErrInvalid, "node %q listed twice", n.Name)
		}
		s.nodeIdx[n.Name] = i
		if n.Leaf == "" {
			n.Leaf = cfg.Tree.LeafOf(n.Name)
		}
	}
	s.held = cluster.NewHoldings(func(name string) *cluster.Node {
		if i, ok := s.nodeIdx[name]; ok {
			return s.nodes[i]
		}
		return nil
	}, nil)
	s.leafCap = newLeafCapacity(s.nodes)
	s.pending.slot = func(j *simJob) *int { return &j.pendSlot }
	s.running.slot = func(j *simJob) *int { return &j.runSlot }
	s.addPartitions(specs)
	s.admit(specs)
	return s, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Partitions == nil {
		cfg.Partitions = DefaultPartitions()
	}
	if cfg.PassInterval <= 0 {
		cfg.PassInterval = DefaultPassInterval
	}
	if cfg.PreemptGrace == 0 {
		cfg.PreemptGrace = DefaultPreemptGrace
	}
	cfg.PreemptGrace = max(cfg.PreemptGrace, 0)
	cfg.Options.PreemptGrace = cfg.PreemptGrace // victims are requeued when it ends
	if cfg.Repair <= 0 {
		cfg.Repair = DefaultRepair
	}
	if cfg.MaxRestarts == 0 {
		cfg.MaxRestarts = DefaultMaxRestarts
	}
	cfg.MaxRestarts = max(cfg.MaxRestarts, 0)
	if cfg.Options.DefaultSwitchWait <= 0 {
		cfg.Options.DefaultSwitchWait = DefaultSwitchWait
	}
	return cfg
}

// addPartitions adds, in order of first use, the partitions jobs name that
// the configuration lacks.
func (s *sim) addPartitions(specs []JobSpec) {
	have := map[string]bool{}
	for _, p := range s.cfg.Partitions {
		have[p.Name] = true
	}
	for _, sp := range specs {
		name := partitionOf(sp)
		if !have[name] {
			have[name] = true
			s.cfg.Partitions = append(s.cfg.Partitions, &cluster.Partition{Name: name, AllNodes: true,
				State: cluster.PartitionUp, PreemptMode: cluster.PreemptOff})
		}
	}
}

func partitionOf(sp JobSpec) string {
	if sp.Partition == "" {
		return DefaultPartition
	}
	return sp.Partition
}
