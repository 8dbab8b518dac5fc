package controller

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// raftNode is the Raft half of a replica: the library, its stores and transport.
type raftNode struct {
	raft      *raft.Raft
	transport *raft.NetworkTransport
	logStore  *raftboltdb.BoltStore
}

func openRaft(cfg Config, st *store.Store, logw io.Writer) (*raftNode, error) {
	rc := raft.DefaultConfig()
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: logw})
	// Proposals arriving together go to the log, and the FSM, together.
	rc.BatchApplyCh = true
	// The store keeps its own state on disk, with the applied index: a
	// restart resumes from it (catchUpFromSnapshot covers a store that is
	// behind the newest snapshot) instead of restoring a snapshot and
	// replaying everything after it.
	rc.NoSnapshotRestoreOnStart = true
	if cfg.FastRaft {
		rc.HeartbeatTimeout = 200 * time.Millisecond
		rc.ElectionTimeout = 200 * time.Millisecond
		rc.LeaderLeaseTimeout = 100 * time.Millisecond
		rc.CommitTimeout = 5 * time.Millisecond
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	logStore, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.DataDir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", filepath.Join(cfg.DataDir, "raft.db"), err)
	}
	snaps, err := raft.NewFileSnapshotStore(cfg.DataDir, 2, logw)
	if err != nil {
		logStore.Close()
		return nil, fmt.Errorf("snapshot store: %w", err)
	}
	if err := catchUpFromSnapshot(st, snaps); err != nil {
		logStore.Close()
		return nil, err
	}
	addr, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
	if err != nil {
		logStore.Close()
		return nil, fmt.Errorf("raft address %q: %w", cfg.RaftAddr, err)
	}
	var advertise net.Addr
	if addr.Port != 0 && !addr.IP.IsUnspecified() {
		advertise = addr
	}
	trans, err := raft.NewTCPTransport(cfg.RaftAddr, advertise, 3, 5*time.Second, logw)
	if err != nil {
		logStore.Close()
		return nil, fmt.Errorf("raft transport on %s: %w", cfg.RaftAddr, err)
	}
	id := cfg.NodeID
	if id == "" {
		id = string(trans.LocalAddr())
	}
	rc.LocalID = raft.ServerID(id)

	if cfg.Bootstrap {
		existing, err := raft.HasExistingState(logStore, logStore, snaps)
		if err != nil {
			trans.Close()
			logStore.Close()
			return nil, err
		}
		if !existing {
			conf, err := bootstrapConfig(rc.LocalID, trans.LocalAddr(), cfg.Peers)
			if err != nil {
				trans.Close()
				logStore.Close()
				return nil, err
			}
			if err := raft.BootstrapCluster(rc, logStore, logStore, snaps, trans, conf); err != nil {
				trans.Close()
				logStore.Close()
				return nil, fmt.Errorf("bootstrap: %w", err)
			}
		}
	}
	r, err := raft.NewRaft(rc, fsm.New(st), logStore, logStore, snaps, trans)
	if err != nil {
		trans.Close()
		logStore.Close()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	return &raftNode{raft: r, transport: trans, logStore: logStore}, nil
}

// catchUpFromSnapshot restores the store from the newest snapshot when the
// store is behind it (its file was lost or replaced by an older copy): Raft
// starts after the snapshot's index and would never replay what is before.
func catchUpFromSnapshot(st *store.Store, snaps raft.SnapshotStore) error {
	list, err := snaps.List()
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	if len(list) == 0 || list[0].Index <= st.AppliedIndex() {
		return nil
	}
	meta, r, err := snaps.Open(list[0].ID)
	if err != nil {
		return fmt.Errorf("open snapshot %s: %w", list[0].ID, err)
	}
	defer r.Close()
	if err := st.Restore(r); err != nil {
		return fmt.Errorf("state is at index %d, behind snapshot %s at %d, and restoring it failed: %w",
			st.AppliedIndex(), meta.ID, meta.Index, err)
	}
	return nil
}

// bootstrapConfig builds the first configuration: this replica plus peers
// given as "id=host:port".
func bootstrapConfig(self raft.ServerID, addr raft.ServerAddress, peers []string) (raft.Configuration, error) {
	conf := raft.Configuration{Servers: []raft.Server{{ID: self, Address: addr, Suffrage: raft.Voter}}}
	for _, p := range peers {
		id, a, ok := strings.Cut(p, "=")
		if !ok || id == "" || a == "" {
			return conf, fmt.Errorf("peer %q: want id=host:port", p)
		}
		if raft.ServerID(id) == self {
			continue
		}
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(a), Suffrage: raft.Voter})
	}
	return conf, nil
}

func (n *raftNode) close() error {
	err := n.raft.Shutdown().Error()
	n.transport.Close()
	if cerr := n.logStore.Close(); err == nil {
		err = cerr
	}
	return err
}
