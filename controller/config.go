package controller

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
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
	// ":0" picks a free port.
	RaftAddr string
	// APIAddr is the gRPC listen address (default :7817).
	APIAddr string
	// Bootstrap makes this replica form a new cluster with Peers (or alone)
	// when its data dir is empty.
	Bootstrap bool
	// Peers are the other voters as "id=raftaddr" for bootstrap.
	Peers []string

	// Partitions replace the replicated ones when the leader starts; nil
	// keeps what is stored, or creates the default partition.
	Partitions []*cluster.Partition
	// Nodes are the NodeName lines of phalanx.conf: their Weight and
	// Features are merged into what each node's agent registers.
	Nodes []config.NodeConf
	// Topology maps nodes to leaf switches; may be nil.
	Topology *topology.Tree

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
	// FastRaft uses tight Raft timings, for tests and dev clusters on one host.
	FastRaft bool

	Clock  Clock
	Logger *slog.Logger
}

// Clock is the controller's source of time.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// DefaultPartition is the partition a controller without a config creates:
// every node, default, unlimited.
func DefaultPartition() *cluster.Partition {
	return &cluster.Partition{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp}
}

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.DataDir == "" {
		return out, fmt.Errorf("controller: a data dir is required (--data-dir)")
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
