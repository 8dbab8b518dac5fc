package controller

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/topology"
)

// Config is what a controller replica needs. Zero values take the defaults
// documented on each field.
type Config struct {
	// NodeID names this replica in the Raft configuration; default: RaftAddr.
	NodeID string
	// DataDir holds raft.db (log and stable store), snapshots/ and state.db.
	DataDir string
	// RaftAddr is the Raft transport's bind address (default 127.0.0.1:7819);
	// ":0" picks a free port. Connections to other replicas are made from
	// its IP when it names one.
	RaftAddr string
	// RaftAdvertise is the Raft address other replicas dial (default:
	// RaftAddr, once bound).
	RaftAdvertise string
	// APIAddr is the gRPC listen address (default :7817).
	APIAddr string
	// APIAdvertise is the API address other replicas and clients are told
	// (default: APIAddr once bound, with this host's name for an
	// unspecified IP).
	APIAdvertise string
	// Bootstrap makes this replica form a new cluster with Peers (or alone)
	// when its data dir is empty, and then only once every other voter has
	// answered that it belongs to no cluster (see raft.go's bootstrap).
	Bootstrap bool
	// Peers are the voters as "id=raftaddr" for bootstrap (this replica may
	// be among them).
	Peers []string
	// PeerAPIs are the API addresses of the other voters, one each: a
	// bootstrap asks them whether a cluster already exists (a replica whose
	// disk was replaced must rejoin it, never found a second one). New
	// refuses a bootstrap with fewer addresses than other voters.
	PeerAPIs []string

	// Partitions replace the replicated ones when the leader starts and
	// they differ from those last applied (reconfigure.go); nil keeps what
	// is stored, or creates the default partition.
	Partitions []*cluster.Partition
	// Nodes are the NodeName lines of phalanx.conf: their Weight and
	// Features are merged into what each node's agent registers.
	Nodes []config.NodeConf
	// LookupGroups names the groups of a job's user (uid, primary gid), for
	// partitions' AllowGroups; nil: this host's user and group database.
	LookupGroups func(uid, gid int) ([]string, error)
	// Reload reads the config file again, as the controller was configured
	// from it (phx scontrol reconfigure, SIGHUP); nil: there is no file.
	Reload func() (Config, error)
	// Topology maps nodes to leaf switches; may be nil.
	Topology *topology.Tree

	// DefaultHangTimeout is the hang timeout of jobs that give none (0:
	// none); MinHangTimeout the shortest a job may give
	// (cluster.MinHangTimeout; shorter only in tests).
	DefaultHangTimeout, MinHangTimeout time.Duration

	// FeatureLevel is the highest feature level of the replicated state
	// this replica reports (store.FeatureLevel): the leader raises the
	// state's level only as far as every member reports. nil: its
	// release's; lower holds the cluster's level back, as a replica of an
	// earlier release does (features.go).
	FeatureLevel *uint64

	// NodeTTL: a node silent this long is declared DOWN (default 30s).
	NodeTTL time.Duration
	// HeartbeatInterval told to agents (default 5s).
	HeartbeatInterval time.Duration
	// SchedInterval: the periodic scheduling pass (default 1s).
	SchedInterval time.Duration
	// KillGrace: SIGTERM to SIGKILL for cancelled tasks (default 10s).
	KillGrace time.Duration
	// PreemptGrace: SIGTERM to SIGKILL for the tasks of a preempted job, its
	// time to checkpoint before it is requeued (default KillGrace).
	PreemptGrace time.Duration
	// MasterPortMin and MasterPortMax bound MASTER_PORT (default 29500-29999).
	MasterPortMin, MasterPortMax int
	// SchedMinGap: at least this long between the end of one event-driven
	// scheduling pass and the start of the next, so a burst of submits makes
	// one pass (default 20ms).
	SchedMinGap time.Duration
	// SchedQueueDepth: how many pending jobs, in priority order, an
	// event-driven pass considers (Slurm's default_queue_depth; default
	// 100). The periodic pass considers all of them.
	SchedQueueDepth int

	// HealthCheck: the node health program agents run (Slurm's
	// HealthCheck* keys); the zero value runs none.
	HealthCheck cluster.HealthCheck
	// Prolog: what agents run before a job's task starts on their node
	// (Slurm's Prolog and PrologEpilogTimeout); the zero value runs none.
	Prolog cluster.Prolog
	// Unkillable: what agents do with a task that outlives its SIGKILL
	// (Slurm's UnkillableStepTimeout and UnkillableStepProgram); the zero
	// value is Slurm's default, 60 s and no program.
	Unkillable cluster.Unkillable

	// MinJobAge: a finished job stays visible to scontrol show job and
	// squeue this long (Slurm's MinJobAge; default 300s; NoMinJobAge: not
	// at all). Accounting sees it until PurgeJobAfter.
	MinJobAge time.Duration
	// FairShareWeight: the priority an account's jobs get at fair-share
	// factor 1 (Slurm's PriorityWeightFairshare; 0: the default,
	// DefaultFairShareWeight; negative: no fair share). DecayHalfLife:
	// usage this long ago counts half (PriorityDecayHalfLife; 0: the
	// default, 7 days; negative: no decay).
	FairShareWeight int64
	DecayHalfLife   time.Duration
	// PurgeJobAfter: finished jobs are forgotten this long after they ended
	// (default 30 days); MaxJobHistory caps how many are kept (0: no cap).
	PurgeJobAfter time.Duration
	MaxJobHistory int
	// PurgeEventAfter: node events are forgotten this long after they
	// happened (default 30 days); MaxEvents caps how many are kept, the
	// oldest going first (default 100,000).
	PurgeEventAfter time.Duration
	MaxEvents       int
	// MaxJobCount: the most jobs not yet finished (pending, running,
	// ending) the cluster holds; a submit beyond it is refused until some
	// end (Slurm's MaxJobCount). Zero: no cap.
	MaxJobCount int
	// MaxArraySize: job array indices run below it (Slurm's MaxArraySize;
	// default cluster.DefaultMaxArraySize).
	MaxArraySize int
	// ClusterName is the config's ClusterName; agents learn it when they
	// register and export it to tasks as SLURM_CLUSTER_NAME. Default
	// DefaultClusterName: Slurm requires one, and scripts find it set.
	ClusterName string
	// ConfigWarnings are the config file's warnings (unknown keys, keys
	// Phalanx does not apply), one line each with its file and line:
	// logged at start, and answered to scontrol reconfigure.
	ConfigWarnings []string
	// MaxScriptSize: the largest batch script a submit may carry, in bytes
	// (phalanx.conf's MaxScriptSize, Slurm's max_script_size; default
	// cluster.DefaultMaxScriptSize, at most cluster.MaxScriptSizeCeiling).
	// The API takes requests this large and somewhat more (recvMsgSize).
	MaxScriptSize int
	// RequestTTL: how long a submit's request ID is remembered for
	// exactly-once retries (default 15 minutes); MaxRequests caps how many
	// (default 200,000).
	RequestTTL  time.Duration
	MaxRequests int
	// JanitorInterval: how often the leader proposes forgetting what
	// outlived its retention (default 30s).
	JanitorInterval time.Duration

	// SnapshotThreshold: Raft snapshots the state (compacting its log) once
	// this many entries were appended since the last snapshot, checked
	// every SnapshotInterval; TrailingLogs entries stay in the log after
	// it, so a replica that lagged less catches up from the log, one that
	// lagged more gets the snapshot. Zero: Raft's defaults (8192, 2m, 10240).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64

	// Fatal stops the process when this replica cannot go on: a committed
	// entry it cannot apply (a command from a newer version, a disk
	// error). It must not return. Default: panic.
	Fatal func(error)
	// FastRaft uses tight Raft timings, for tests and dev clusters on one host.
	FastRaft bool
	// NoSync skips fsync of the state database (tests only; the Raft log is
	// always synced).
	NoSync bool

	// AuthKeys are the cluster keys: every call to the controller API must
	// carry a credential signed with one of them (see package auth), and
	// the controller signs with the current one. Required unless Insecure.
	AuthKeys *auth.Keyring
	// TLS is the replica's certificate and the cluster CA (package pki):
	// the API is served over TLS, Raft traffic and calls between replicas
	// are mutual TLS with controllers' certificates, and a node API call
	// comes from the node its certificate names. Nil serves plaintext
	// (the binary allows that only with --insecure; in-process tests use
	// it).
	TLS *pki.Material
	// Insecure serves the API without authentication: anyone who reaches
	// the port acts as whoever they claim. For debugging only.
	Insecure bool
	// AdminUsers may do anything: change any job, change membership, back
	// up and restore, sign tokens for other users. Root and the user the
	// controller runs as (Slurm's SlurmUser) always may.
	AdminUsers []string
	// OperatorUsers may change any job (cancel, and the like) but not the
	// cluster.
	OperatorUsers []string
	// DisableRootJobs refuses jobs that would run as root (Slurm's key).
	DisableRootJobs bool
	// PrivateJobs hides other users' jobs from users (Slurm's
	// PrivateData=jobs): operators and administrators still see all.
	PrivateJobs bool
	// RateLimit limits each user's calls (Slurm's rl_* settings); off
	// when its Bucket is zero.
	RateLimit RateLimit

	Clock  Clock
	Logger *slog.Logger
}

// DefaultFairShareWeight is PriorityWeightFairshare's default: as much as
// a week of waiting (the age term's cap, 10,080) at most.
const DefaultFairShareWeight = 10000

// NoMinJobAge is the MinJobAge that hides finished jobs from the
// controller's view at once (zero means the default).
const NoMinJobAge time.Duration = -1

// Clock is the controller's source of time.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// DefaultPartition is the partition a controller without a config creates:
// every node, default, unlimited, of the default PriorityTier (Slurm's 1).
func DefaultPartition() *cluster.Partition {
	return &cluster.Partition{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp, PriorityTier: config.DefaultPriorityTier}
}

// DefaultClusterName is the ClusterName of a cluster whose config names
// none.
const DefaultClusterName = "phalanx"

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.DataDir == "" {
		return out, fmt.Errorf("controller: a data dir is required (--data-dir)")
	}
	if out.AuthKeys == nil && !out.Insecure {
		return out, fmt.Errorf("controller: no cluster key: give --auth-key FILE (create it with `phalanx-controller keygen FILE`), or --insecure to run without authentication (debugging only)")
	}
	if err := out.HealthCheck.Validate(); err != nil {
		return out, fmt.Errorf("controller: %w", err)
	}
	if err := out.Prolog.Validate(); err != nil {
		return out, fmt.Errorf("controller: %w", err)
	}
	if err := out.Unkillable.Validate(); err != nil {
		return out, fmt.Errorf("controller: %w", err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"HeartbeatInterval", out.HeartbeatInterval}, {"KillGrace", out.KillGrace}, {"PreemptGrace", out.PreemptGrace}, {"MinHangTimeout", out.MinHangTimeout}} {
		if d.v < 0 {
			return out, fmt.Errorf("controller: %s %s is negative: give a positive duration, or 0 for the default", d.name, d.v)
		}
	}
	if out.RaftAddr == "" {
		out.RaftAddr = "127.0.0.1:7819"
	}
	if out.APIAddr == "" {
		out.APIAddr = ":7817"
	}
	if out.NodeTTL == 0 {
		out.NodeTTL = 30 * time.Second
	}
	if out.HeartbeatInterval == 0 {
		out.HeartbeatInterval = 5 * time.Second
	}
	if out.MinHangTimeout == 0 {
		out.MinHangTimeout = cluster.MinHangTimeout
	}
	if err := cluster.ValidateHangTimeout(out.DefaultHangTimeout, out.MinHangTimeout); err != nil {
		return out, fmt.Errorf("controller: default %w", err)
	}
	if err := checkLeaseTiming(out.NodeTTL, out.HeartbeatInterval); err != nil {
		return out, err
	}
	if out.MaxArraySize == 0 {
		out.MaxArraySize = cluster.DefaultMaxArraySize
	}
	if out.SchedInterval == 0 {
		out.SchedInterval = time.Second
	}
	if out.KillGrace == 0 {
		out.KillGrace = 10 * time.Second
	}
	if out.PreemptGrace == 0 {
		out.PreemptGrace = out.KillGrace
	}
	if out.MasterPortMin == 0 {
		out.MasterPortMin, out.MasterPortMax = 29500, 29999
	}
	if out.SchedMinGap == 0 {
		out.SchedMinGap = 20 * time.Millisecond
	}
	if out.SchedQueueDepth == 0 {
		out.SchedQueueDepth = 100
	}
	if out.MinJobAge == 0 {
		out.MinJobAge = 300 * time.Second
	}
	if out.FairShareWeight == 0 {
		out.FairShareWeight = DefaultFairShareWeight
	}
	if out.DecayHalfLife == 0 {
		out.DecayHalfLife = cluster.DefaultDecayHalfLife
	}
	if out.PurgeJobAfter == 0 {
		out.PurgeJobAfter = 30 * 24 * time.Hour
	}
	if out.PurgeEventAfter == 0 {
		out.PurgeEventAfter = 30 * 24 * time.Hour
	}
	if out.MaxEvents == 0 {
		out.MaxEvents = 100000
	}
	if out.RequestTTL == 0 {
		out.RequestTTL = 15 * time.Minute
	}
	if out.ClusterName == "" {
		out.ClusterName = DefaultClusterName
	}
	if out.MaxRequests == 0 {
		out.MaxRequests = 200000
	}
	if out.JanitorInterval == 0 {
		out.JanitorInterval = 30 * time.Second
	}
	if out.MaxScriptSize == 0 {
		out.MaxScriptSize = cluster.DefaultMaxScriptSize
	}
	if out.MaxScriptSize < 0 || out.MaxScriptSize > cluster.MaxScriptSizeCeiling {
		return out, fmt.Errorf("controller: MaxScriptSize %d is out of range: give 1 to %d bytes", out.MaxScriptSize, cluster.MaxScriptSizeCeiling)
	}
	if out.MasterPortMax < out.MasterPortMin {
		return out, fmt.Errorf("controller: master port range %d-%d is empty", out.MasterPortMin, out.MasterPortMax)
	}
	if out.Clock == nil {
		out.Clock = realClock{}
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	return out, nil
}
