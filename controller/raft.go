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
)

// raftNode is the Raft half of a replica: the library, its stores and transport.
type raftNode struct {
	raft      *raft.Raft
	transport *raft.NetworkTransport
	logStore  *raftboltdb.BoltStore
}

func openRaft(cfg Config, f raft.FSM, logw io.Writer) (*raftNode, error) {
	rc := raft.DefaultConfig()
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: logw})
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
	r, err := raft.NewRaft(rc, f, logStore, logStore, snaps, trans)
	if err != nil {
		trans.Close()
		logStore.Close()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	return &raftNode{raft: r, transport: trans, logStore: logStore}, nil
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
