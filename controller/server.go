package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// Server is one controller replica: Raft, the store, the gRPC services and,
// while it leads, the scheduling loop, liveness tracking and retention.
type Server struct {
	lock      *os.File // flock on the data dir: one replica per data dir
	cfg       Config
	log       *slog.Logger
	store     *store.Store
	raft      *raftNode
	grpc      *grpc.Server
	lis       net.Listener
	apiAddr   string // advertised API address
	peerConns *peerConns
	peerCred  *auth.Source // signs this replica's own calls to its peers
	limiter   *rateLimiter // nil: no rate limit
	access    *access      // who may do what (authn.go, authz.go)
	gate      *gate        // which pending jobs may not start yet (gate.go)
	fairShare *fairShare   // leader only: the accounts' fair-share terms (fairshare.go)

	kick     chan struct{}
	feasible feasibility
	logs     *logHub     // agents' log streams (phx logs)
	steps    stepNumbers // steps started from outside their jobs (RunStep)
	live     atomic.Pointer[liveConfig]

	mu       sync.Mutex
	nextID   cluster.JobID              // 0 unless this replica leads and has taken over
	inflight map[cluster.JobID]struct{} // IDs handed out whose submit is being committed
	nodes    liveness                   // leader only: when each node was heard from (liveness.go)
	pending  pendingReasons             // leader only: the scheduler's reasons
	// touched: leader only: pending jobs changed since the last pass
	// (scontrol update, hold, release), which the next quick pass decides
	// too, wherever they were in the queue.
	touched []cluster.JobID
	term    chan struct{} // leader only: closed when leadership ends

	stop      chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

// New opens the store and Raft and starts serving gRPC on cfg.APIAddr.
func New(cfg Config) (*Server, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	lock, err := lockDataDir(c.DataDir)
	if err != nil {
		return nil, err
	}
	removeTransfers(c.DataDir, c.Logger)
	opts := []store.Option{store.DecayHalfLife(c.DecayHalfLife)} // negative: none
	if c.NoSync {
		opts = append(opts, store.NoSync())
	}
	st, err := store.Open(filepath.Join(c.DataDir, "state.db"), opts...)
	if errors.Is(err, store.ErrCutShort) {
		// As docs/operations.md says: the others hold the state.
		err = fmt.Errorf("%w: move %s aside and start this replica with an empty data dir: it rejoins its cluster, "+
			"and the other replicas bring it up to date (a cluster of one replica: restore a backup into it, phx scontrol restore)", err, c.DataDir)
	}
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("open state: %w", err)
	}
	s := &Server{
		lock:      lock,
		cfg:       c,
		log:       c.Logger,
		store:     st,
		peerConns: newPeerConns(peerTransport(c.TLS)),
		peerCred:  peerSource(c),
		limiter:   newRateLimiter(c.RateLimit),
		access:    newAccess(c, st.JobRecord),
		gate:      &gate{jobs: st, clock: c.Clock},
		fairShare: &fairShare{weight: c.FairShareWeight, usage: st.Usage},
		kick:      make(chan struct{}, 1),
		inflight:  map[cluster.JobID]struct{}{},
		logs:      newLogHub(),
		stop:      make(chan struct{}),
	}
	s.nodes.reset(nil, time.Time{}) // a leader resets it when it takes over
	s.live.Store(&liveConfig{Partitions: c.Partitions, Nodes: c.Nodes})
	s.lis, err = net.Listen("tcp", c.APIAddr)
	if err != nil {
		st.Close()
		lock.Close()
		return nil, fmt.Errorf("listen on %s: %w", c.APIAddr, err)
	}
	s.apiAddr = advertised(c.APIAdvertise, s.lis.Addr())
	s.raft, err = openRaft(c, st, raftLogWriter{c.Logger})
	if err != nil {
		s.lis.Close()
		st.Close()
		lock.Close()
		return nil, err
	}
	srvOpts := []grpc.ServerOption{grpc.MaxRecvMsgSize(recvMsgSize(c.MaxScriptSize))}
	if c.TLS != nil {
		// Users come without a certificate (their credential says who
		// they are); agents and other replicas present theirs.
		srvOpts = append(srvOpts, grpc.Creds(credentials.NewTLS(c.TLS.ServerConfig(0, c.Logger))))
		// Forwarded node calls are checked against this replica's
		// certificate: connect again with the one just reloaded.
		c.TLS.OnReload(s.peerConns.reset)
	}
	s.grpc = grpc.NewServer(append(srvOpts,
		grpc.ChainUnaryInterceptor(s.recoverUnary, s.routeUnary), grpc.ChainStreamInterceptor(s.recoverStream, s.routeStream))...)
	phalanxv1.RegisterControllerServiceServer(s.grpc, &controllerService{s: s})
	phalanxv1.RegisterNodeServiceServer(s.grpc, &nodeService{s: s})
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		if err := s.grpc.Serve(s.lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error("grpc serve", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		s.leadership()
	}()
	go func() {
		defer s.wg.Done()
		s.registerSelf()
	}()
	return s, nil
}

// lockDataDir takes an exclusive lock on the data dir, so that a second
// replica started on it fails at once with a clear message instead of
// waiting on one of the databases' own locks.
func lockDataDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("data dir %s is in use by another phalanx-controller (stop it, or give this one its own --data-dir)", dir)
	}
	return f, nil
}

// removeTransfers removes what a backup or restore left in the data dir
// when the replica died in the middle of one.
func removeTransfers(dir string, log *slog.Logger) {
	for _, pattern := range []string{"backup-*.db", "restore-*.db", "restore-*.db.check"} {
		left, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range left {
			if err := os.Remove(f); err == nil {
				log.Info("removed what an interrupted backup or restore left", "file", f)
			}
		}
	}
}

// advertised is the address to tell others: explicit, else the bound
// address, with this host's name in place of an unspecified IP.
func advertised(explicit string, bound net.Addr) string {
	if explicit != "" {
		return explicit
	}
	host, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return bound.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil {
			host = name
		}
	}
	return net.JoinHostPort(host, port)
}

// ID is this replica's Raft ID.
func (s *Server) ID() string { return string(s.raft.id) }

// APIAddr is the address the gRPC API is advertised at.
func (s *Server) APIAddr() string { return s.apiAddr }

// RaftAddr is the Raft transport's advertised address.
func (s *Server) RaftAddr() string { return string(s.raft.transport.LocalAddr()) }

// IsLeader reports whether this replica leads.
func (s *Server) IsLeader() bool { return s.raft.raft.State() == raft.Leader }

// Store exposes the replica's state for reads (tests, dashboards).
func (s *Server) Store() *store.Store { return s.store }

// Raft exposes the replica's Raft instance (tests and tools that inspect
// or snapshot it).
func (s *Server) Raft() *raft.Raft { return s.raft.raft }

// WaitLeader blocks until this replica leads, has caught up with the log
// and accepts writes, or ctx ends.
func (s *Server) WaitLeader(ctx context.Context) error {
	for !s.ready() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("no leadership: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// ready reports whether this replica leads and has finished taking over
// (IDs continue after the last committed job).
func (s *Server) ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextID != 0 && s.IsLeader()
}

// Close stops serving and shuts Raft and the store down. It is safe to call
// more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.grpc.Stop()
		err := s.raft.close()
		s.wg.Wait()
		s.peerConns.close()
		if cerr := s.store.Close(); err == nil {
			err = cerr
		}
		s.lock.Close()
		s.closeErr = err
	})
	return s.closeErr
}

// proposeTimeout bounds a proposal whose context has no deadline.
const proposeTimeout = 10 * time.Second

// propose commits a command through Raft and returns the FSM's result, or
// ctx's error if it ends first (the command may still commit: callers that
// retry must be idempotent, as every command and exactly-once submits are).
func (s *Server) propose(ctx context.Context, c fsm.Command) (fsm.Result, error) {
	data, err := fsm.Encode(c)
	if err != nil {
		return fsm.Result{}, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, proposeTimeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	f := s.raft.raft.Apply(data, time.Until(deadline))
	if err := waitFuture(ctx, f); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fsm.Result{}, s.notLeader()
		}
		return fsm.Result{}, fmt.Errorf("commit %T: %w", c, err)
	}
	res, _ := f.Response().(fsm.Result)
	return res, res.Err
}

// waitFuture waits for a Raft future or for ctx, whichever ends first.
func waitFuture(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-done:
		return err
	}
}

// notLeader is the error for a call this replica cannot take: it names the
// leader, and its API address, when known. A replica outside its own Raft
// configuration says that instead: no election will make it lead.
func (s *Server) notLeader() error {
	if !hasMember(s.raft.raft.GetConfiguration().Configuration().Servers, s.raft.id) {
		return s.notMember()
	}
	id, addr := s.leader()
	return &notLeaderError{leaderID: id, leaderAddr: addr}
}

// notMember is the error of a replica outside its own Raft configuration.
func (s *Server) notMember() error {
	id, addr := s.leader()
	return &notLeaderError{leaderID: id, leaderAddr: addr, notMember: s.ID()}
}

// leader returns the current leader's Raft ID and API address ("" when
// unknown). The address comes from the leader's record in the replicated
// state.
func (s *Server) leader() (id, apiAddr string) {
	_, lid := s.raft.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	if lid == s.raft.id {
		return string(lid), s.apiAddr
	}
	c, _ := s.store.Controller(string(lid))
	return string(lid), c.APIAddr
}

// kickScheduler asks for a scheduling pass soon.
// touch has the next pass decide pending job id, changed, and kicks it.
func (s *Server) touch(id cluster.JobID) {
	s.mu.Lock()
	if len(s.touched) < maxTouched {
		s.touched = append(s.touched, id)
	}
	s.mu.Unlock()
	s.kickScheduler()
}

// maxTouched bounds the jobs a quick pass decides because they changed;
// the next full pass decides the others.
const maxTouched = 1024

func (s *Server) kickScheduler() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// raftLogWriter sends raft's own log lines to slog at debug level.
type raftLogWriter struct{ log *slog.Logger }

func (w raftLogWriter) Write(p []byte) (int, error) {
	w.log.Debug(string(p), "component", "raft")
	return len(p), nil
}

var _ io.Writer = raftLogWriter{}
