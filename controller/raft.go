package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"google.golang.org/grpc"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/pki"
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
	logStore  logStore
	stopBoot  func() // ends a bootstrap still waiting for its peers
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
	// A leader that removes itself steps down and stays a replica outside
	// the configuration, as a removed follower does, so that adding it
	// back works without a restart (Raft's default shuts it down for good,
	// with the process still running and answering).
	rc.ShutdownOnRemove = false
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
	logStore, err := openLogStore(cfg.DataDir)
	if err != nil {
		return nil, err
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
	if n.transport, err = newTransport(cfg.RaftAddr, cfg.RaftAdvertise, cfg.TLS, cfg.Logger, logw); err != nil {
		return nil, err
	}
	n.id = raft.ServerID(cfg.NodeID)
	if n.id == "" {
		n.id = raft.ServerID(n.transport.LocalAddr())
	}
	rc.LocalID = n.id
	var boot *bootstrap
	if cfg.Bootstrap {
		if boot, err = planBootstrap(cfg, n.id, n.transport.LocalAddr(), logStore, snaps); err != nil {
			return nil, err
		}
	}
	// Recent entries stay in memory: the leader sends them to followers,
	// and every replica applies them, without reading them back from disk.
	cache, err := raft.NewLogCache(logCacheSize, logStore)
	if err != nil {
		return nil, err
	}
	fsmOpts := []fsm.Option{fsm.OnRestore(func(index uint64) {
		cfg.Logger.Info("state replaced by a snapshot", "applied_index", index)
	}), fsm.SnapshotIndex(func() (uint64, error) { return newestSnapshot(snaps) })}
	if cfg.Fatal != nil {
		fsmOpts = append(fsmOpts, fsm.OnFatal(cfg.Fatal))
	}
	n.raft, err = raft.NewRaft(rc, fsm.New(st, fsmOpts...), cache, logStore, snaps, n.transport)
	if err != nil {
		return nil, fmt.Errorf("start raft: %w", err)
	}
	n.stopBoot = boot.start(n.raft)
	ok = true
	return n, nil
}

// bootstrap forms a new cluster of the configured voters, once. It is
// planned before Raft starts, when this replica has no Raft state, and
// carried out in the background once Raft runs, so that the replica
// answers its peers' questions while it asks its own.
//
// The rule: a replica with no state forms the cluster at once when it is
// the only voter; otherwise only when every other voter has answered that
// it has no cluster either (replicas all starting new each bootstrap the
// same configuration, which Raft accepts). As soon as a peer answers that
// it belongs to a cluster, or a leader reaches this replica first, it
// gives up: it is a member whose disk was lost (or a latecomer), and the
// leader brings it up to date. A peer that does not answer is asked again,
// for as long as it takes: a replica never founds a second cluster because
// its peers were unreachable for a moment.
type bootstrap struct {
	conf  raft.Configuration
	peers []string // API addresses of the other voters
	cred  *auth.Source
	creds grpc.DialOption // the transport to the peers
	log   *slog.Logger
}

// Waits between two rounds of questions to the peers.
const (
	bootstrapRetryMin = 100 * time.Millisecond
	bootstrapRetryMax = 2 * time.Second
	// Peers not answering are logged after bootstrapLogFirst (replicas
	// started together take a moment), then every bootstrapLogEvery.
	bootstrapLogFirst = 3 * time.Second
	bootstrapLogEvery = 15 * time.Second
)

// planBootstrap returns the bootstrap to carry out, or nil when this
// replica already has Raft state.
func planBootstrap(cfg Config, self raft.ServerID, addr raft.ServerAddress, logs logStore, snaps raft.SnapshotStore) (*bootstrap, error) {
	existing, err := raft.HasExistingState(logs, logs, snaps)
	if err != nil || existing {
		return nil, err
	}
	conf, err := bootstrapConfig(self, addr, cfg.Peers)
	if err != nil {
		return nil, err
	}
	if others := len(conf.Servers) - 1; len(cfg.PeerAPIs) < others {
		return nil, fmt.Errorf("bootstrap with %d other voters needs their API addresses (%d given) to check that no cluster exists: list every replica in ControllerHost lines, or give --peer-apis", others, len(cfg.PeerAPIs))
	}
	return &bootstrap{conf: conf, peers: cfg.PeerAPIs, cred: peerSource(cfg), creds: peerTransport(cfg.TLS), log: cfg.Logger}, nil
}

// start runs the bootstrap in the background and returns the function
// that stops it. A nil bootstrap has nothing to do.
func (b *bootstrap) start(r *raft.Raft) (stop func()) {
	if b == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.run(ctx, r)
	}()
	return func() { cancel(); <-done }
}

// run asks the peers until the rule allows forming the cluster, or says
// this replica must not.
func (b *bootstrap) run(ctx context.Context, r *raft.Raft) {
	wait, logAt := bootstrapRetryMin, time.Now().Add(bootstrapLogFirst)
	for {
		if r.LastIndex() > 0 {
			return // a leader reached this replica: it has joined
		}
		member, silent, err := b.ask(ctx)
		switch {
		case member != "":
			b.log.Info("not forming a new cluster: a peer belongs to one; waiting for its leader to bring this replica up to date", "peer", member)
			return
		case len(silent) == 0:
			b.form(r)
			return
		case time.Now().After(logAt):
			b.log.Warn("not forming a new cluster until every other replica answers that it has none (this one may have lost its data and must rejoin its cluster); asking again",
				"unanswered", strings.Join(silent, ","), "err", err)
			logAt = time.Now().Add(bootstrapLogEvery)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, bootstrapRetryMax)
	}
}

// ask asks every peer whether it belongs to a cluster. It returns the
// address of one that does, or the peers that did not answer and the
// first error.
func (b *bootstrap) ask(ctx context.Context) (member string, silent []string, err error) {
	for _, a := range b.peers {
		st, perr := probeStatus(asController(ctx, b.cred), a, b.creds)
		switch {
		case perr != nil:
			silent = append(silent, a)
			if err == nil {
				err = perr
			}
		case st.GetLeaderId() != "" || st.GetLastLogIndex() > 0:
			return a, nil, nil
		}
	}
	return "", silent, err
}

// form bootstraps the running Raft instance. Raft refuses when the replica
// gained state meanwhile (a leader reached it, or it voted): then it has
// joined a cluster already.
func (b *bootstrap) form(r *raft.Raft) {
	err := r.BootstrapCluster(b.conf).Error()
	switch {
	case err == nil:
		b.log.Info("formed a new cluster", "voters", len(b.conf.Servers))
	case errors.Is(err, raft.ErrCantBootstrap), errors.Is(err, raft.ErrRaftShutdown):
	default:
		b.log.Error("bootstrap failed", "err", err)
	}
}

// bootstrapConfig builds the first configuration: this replica plus peers
// given as "id=host:port", in the peers' order (the ControllerHost lines'),
// this replica in its place among them, or first when they leave it out.
// Replicas given the same list thus form the same configuration, and list
// the members (scontrol ping, show controllers) in the same order.
func bootstrapConfig(self raft.ServerID, addr raft.ServerAddress, peers []string) (raft.Configuration, error) {
	me := raft.Server{ID: self, Address: addr, Suffrage: raft.Voter}
	var conf raft.Configuration
	for _, p := range peers {
		id, a, ok := strings.Cut(p, "=")
		if !ok || id == "" || a == "" {
			return conf, fmt.Errorf("peer %q: want id=host:port", p)
		}
		if raft.ServerID(id) == self {
			if !hasMember(conf.Servers, self) {
				conf.Servers = append(conf.Servers, me)
			}
			continue
		}
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(a), Suffrage: raft.Voter})
	}
	if !hasMember(conf.Servers, self) {
		conf.Servers = append([]raft.Server{me}, conf.Servers...)
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
	if err := st.Restore(r, meta.Index); err != nil {
		return fmt.Errorf("state is at index %d, behind snapshot %s at %d, and restoring it failed: %w",
			st.AppliedIndex(), meta.ID, meta.Index, err)
	}
	return nil
}

// newestSnapshot returns the index of the newest snapshot in snaps.
func newestSnapshot(snaps raft.SnapshotStore) (uint64, error) {
	list, err := snaps.List()
	if err != nil {
		return 0, fmt.Errorf("list snapshots: %w", err)
	}
	if len(list) == 0 {
		return 0, errors.New("no snapshot stored")
	}
	return list[0].Index, nil
}

// newTransport binds the Raft transport. Connections to other replicas
// leave from the bind IP when one is given, so that a multi-homed host (or
// a test with one loopback address per replica) sends Raft traffic from the
// address the others know it by.
func newTransport(bind, advertise string, m *pki.Material, log *slog.Logger, logw io.Writer) (*raft.NetworkTransport, error) {
	lis, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft transport on %s: %w", bind, err)
	}
	l := &streamLayer{Listener: lis}
	if m != nil {
		l.server, l.client = m.ServerConfig(pki.KindController, log), m.ClientConfig()
	}
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

// streamLayer is raft's TCP stream layer, dialing from the bind IP. With
// TLS, both ends of every connection present a controller's certificate:
// nothing but a replica of this cluster reads or writes the Raft log.
type streamLayer struct {
	net.Listener
	advertise      net.Addr
	dialer         net.Dialer
	server, client *tls.Config // nil: plaintext
}

func (l *streamLayer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil || l.server == nil {
		return c, err
	}
	// The handshake happens at the first read, on the connection's own
	// goroutine: one slow peer does not hold up the others' connections.
	return tls.Server(c, l.server), nil
}

func (l *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := l.dialer
	d.Timeout = timeout
	c, err := d.Dial("tcp", string(address))
	if err != nil || l.client == nil {
		return c, err
	}
	tc := tls.Client(c, l.client)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("raft TLS with %s: %w", address, err)
	}
	return tc, nil
}

func (l *streamLayer) Addr() net.Addr { return l.advertise }

func (n *raftNode) close() error {
	n.stopBoot()
	err := n.raft.Shutdown().Error()
	n.transport.Close()
	if cerr := n.logStore.Close(); err == nil {
		err = cerr
	}
	return err
}
