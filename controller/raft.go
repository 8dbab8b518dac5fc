package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// Raft timings. A follower that hears nothing from the leader for
// HeartbeatTimeout (randomised up to twice that) starts an election; a
// leader that cannot reach a majority for LeaderLeaseTimeout steps down.
// Half a second suits replicas on one LAN (round trips well under a
// millisecond, fsync about one): a dead leader is replaced within about a
// second, and a GC pause or a slow disk of a few hundred milliseconds does
// not cause an election. FastRaft (tests and dev clusters on one host)
// halves it again.
const (
	electionTimeout     = 500 * time.Millisecond
	fastElectionTimeout = 200 * time.Millisecond
)

// logCacheSize is how many recent log entries are kept in memory.
const logCacheSize = 4096

// raftNode is the Raft half of a replica: the library, its stores and
// transport.
type raftNode struct {
	id        raft.ServerID
	raft      *raft.Raft
	transport *raft.NetworkTransport
	logStore  *raftboltdb.BoltStore
}

func raftConfig(cfg Config, logw io.Writer) *raft.Config {
	rc := raft.DefaultConfig()
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: logw})
	timeout := electionTimeout
	if cfg.FastRaft {
		timeout = fastElectionTimeout
		rc.CommitTimeout = 5 * time.Millisecond
	}
	rc.HeartbeatTimeout = timeout
	rc.ElectionTimeout = timeout
	rc.LeaderLeaseTimeout = timeout / 2
	// Proposals arriving together go to the log, and to the FSM, together.
	rc.BatchApplyCh = true
	// The store keeps its own state on disk, with the applied index: a
	// restart resumes from it (catchUpFromSnapshot covers a store that is
	// behind the newest snapshot) instead of restoring a snapshot and
	// replaying everything after it.
	rc.NoSnapshotRestoreOnStart = true
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	return rc
}

func openRaft(cfg Config, st *store.Store, logw io.Writer) (*raftNode, error) {
	rc := raftConfig(cfg, logw)
	logPath := filepath.Join(cfg.DataDir, "raft.db")
	logStore, err := raftboltdb.New(raftboltdb.Options{Path: logPath})
	if err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", logPath, err)
	}
	n := &raftNode{logStore: logStore}
	ok := false
	defer func() {
		if !ok {
			if n.transport != nil {
				n.transport.Close()
			}
			logStore.Close()
		}
	}()
	snaps, err := raft.NewFileSnapshotStore(cfg.DataDir, 2, logw)
	if err != nil {
		return nil, fmt.Errorf("snapshot store: %w", err)
	}
	if err := catchUpFromSnapshot(st, snaps); err != nil {
		return nil, err
	}
	if n.transport, err = newTransport(cfg.RaftAddr, cfg.RaftAdvertise, logw); err != nil {
		return nil, err
	}
	n.id = raft.ServerID(cfg.NodeID)
	if n.id == "" {
		n.id = raft.ServerID(n.transport.LocalAddr())
	}
	rc.LocalID = n.id
	if cfg.Bootstrap {
		if err := bootstrap(cfg, rc, logStore, snaps, n.transport); err != nil {
			return nil, err
		}
	}
	// Recent entries stay in memory: the leader sends them to followers,
	// and every replica applies them, without reading them back from disk.
	cache, err := raft.NewLogCache(logCacheSize, logStore)
	if err != nil {
		return nil, err
	}
	n.raft, err = raft.NewRaft(rc, fsm.New(st), cache, logStore, snaps, n.transport)
	if err != nil {
		return nil, fmt.Errorf("start raft: %w", err)
	}
	ok = true
	return n, nil
}

// bootstrap forms a new cluster of the configured voters, once: only when
// this replica has no Raft state and no peer already belongs to a cluster.
// A replica whose disk was lost restarts empty; it must rejoin the cluster
// its peers still run (the leader brings it up to date), never found a
// second one. Replicas that all start empty at the same time each bootstrap
// with the same configuration, which Raft accepts.
func bootstrap(cfg Config, rc *raft.Config, logs *raftboltdb.BoltStore, snaps raft.SnapshotStore, trans raft.Transport) error {
	existing, err := raft.HasExistingState(logs, logs, snaps)
	if err != nil || existing {
		return err
	}
	conf, err := bootstrapConfig(rc.LocalID, trans.LocalAddr(), cfg.Peers)
	if err != nil {
		return err
	}
	if peer := clusterPeer(cfg.PeerAPIs); peer != "" {
		cfg.Logger.Info("a peer already belongs to a cluster: not bootstrapping; waiting to be brought up to date", "peer", peer)
		return nil
	}
	if err := raft.BootstrapCluster(rc, logs, logs, snaps, trans, conf); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	return nil
}

// clusterPeer returns the first peer API address whose replica reports a
// cluster (a leader or applied entries), or "".
func clusterPeer(addrs []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, a := range addrs {
		st, err := probeStatus(ctx, a)
		if err == nil && (st.GetLeaderId() != "" || st.GetLastLogIndex() > 0) {
			return a
		}
	}
	return ""
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

// newTransport binds the Raft transport. Connections to other replicas
// leave from the bind IP when one is given, so that a multi-homed host (or
// a test with one loopback address per replica) sends Raft traffic from the
// address the others know it by.
func newTransport(bind, advertise string, logw io.Writer) (*raft.NetworkTransport, error) {
	lis, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft transport on %s: %w", bind, err)
	}
	l := &streamLayer{Listener: lis}
	if tcp, ok := lis.Addr().(*net.TCPAddr); ok && !tcp.IP.IsUnspecified() {
		l.dialer.LocalAddr = &net.TCPAddr{IP: tcp.IP}
		l.advertise = tcp
	}
	if advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", advertise)
		if err != nil {
			lis.Close()
			return nil, fmt.Errorf("raft advertise address %q: %w", advertise, err)
		}
		l.advertise = a
	}
	if l.advertise == nil {
		lis.Close()
		return nil, fmt.Errorf("raft address %q binds every interface: give --raft-advertise, the address other replicas reach this one at", bind)
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  l,
		MaxPool: 3,
		Timeout: 5 * time.Second,
		Logger:  hclog.New(&hclog.LoggerOptions{Name: "raft-net", Level: hclog.Warn, Output: logw}),
	}), nil
}

// streamLayer is raft's TCP stream layer, dialing from the bind IP.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	dialer    net.Dialer
}

func (l *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := l.dialer
	d.Timeout = timeout
	return d.Dial("tcp", string(address))
}

func (l *streamLayer) Addr() net.Addr { return l.advertise }

func (n *raftNode) close() error {
	err := n.raft.Shutdown().Error()
	n.transport.Close()
	if cerr := n.logStore.Close(); err == nil {
		err = cerr
	}
	return err
}
