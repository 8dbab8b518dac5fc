// Package apiclient connects to a Phalanx controller cluster: one
// grpc.ClientConnInterface over the list of replica addresses, which tries
// them in turn and follows the leader. phx and the node agents use it, so
// that an election, a dead replica or a stopped one costs a retry, not an
// error.
//
// A call goes first to the replica believed to lead (learned from the
// "phalanx-leader" reply header and from NotLeader errors), then to the
// others. It moves on when a replica is unreachable (UNAVAILABLE without a
// leader hint), names another leader (UNAVAILABLE with a NotLeader detail),
// or does not answer within its share of the deadline (sooner when it is
// silent and another replica says it leads: probe.go); after a round with
// no answer it backs off briefly and starts again, until the caller's
// deadline. Phalanx's calls are safe to repeat this way: submits, cancels
// and job updates carry a request ID, and the other writes are idempotent,
// except a leadership transfer, which a repeat may carry on to another
// replica.
//
// A stream stays on the replica it was opened on. One opened with
// FollowLeader (stream.go) ends once any call's answer names another
// leader, so that its caller opens it again there.
package apiclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// DefaultPort is the controller API's port when an address has none.
const DefaultPort = "7817"

// Metadata keys shared with the controller.
const (
	leaderHeader = "phalanx-leader"
	readHeader   = "phalanx-read"
)

// Timing of failover.
const (
	minAttempt    = time.Second // the least a replica is given to answer
	connectTimout = time.Second // to open a connection to a replica
	firstBackoff  = 25 * time.Millisecond
	// maxBackoff is short: an election takes well under a second, and a
	// client asleep past its end adds to the outage what it waits. A few
	// calls a second per waiting client cost the replicas nothing.
	maxBackoff   = 100 * time.Millisecond
	maxRedirects = 4 // leader hints followed at once per call, before backing off
	// refusedGrace: when every replica has refused connections for this
	// long (nothing listens: not an election), a call gives up early.
	refusedGrace = 2 * time.Second
)

// MaxRecvMsgSize is the largest answer a client takes. A job (GetJob)
// carries its script, up to the controllers' MaxScriptSize (4 MiB by
// default, 64 MiB at most), and its environment, up to 1 MiB in each of
// its two forms; an agent's assignments carry those of every job on its
// node. gRPC's default of 4 MiB would refuse a single job at Slurm's
// default script limit.
const MaxRecvMsgSize = 256 << 20

// Conn is a client connection to a controller cluster. It is safe for
// concurrent use.
type Conn struct {
	addrs []string
	opts  []grpc.DialOption

	mu     sync.Mutex
	leader string        // the replica believed to lead; "" unknown
	moved  chan struct{} // closed and replaced when leader changes, and at Close
	conns  map[string]*grpc.ClientConn
	closed bool

	probes probeRounds // probe.go
}

var _ grpc.ClientConnInterface = (*Conn)(nil)

// Option configures Dial.
type Option func(*Conn)

// WithLeader starts with addr believed to lead (a hint a client kept from
// its last run): calls go there first, and the usual failover corrects a
// stale hint. An address not among the controllers is ignored.
func WithLeader(addr string) Option {
	return func(c *Conn) {
		for _, a := range c.addrs {
			if a == addr {
				c.leader = addr
			}
		}
	}
}

// WithDialOptions adds gRPC dial options (credentials, interceptors) used
// for every replica. Without credentials the connections are plaintext.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *Conn) { c.opts = append(c.opts, opts...) }
}

// Dial prepares a connection to the controllers at addrs (host or
// host:port; the default port is added). Connecting is lazy: errors show
// at the first call.
func Dial(addrs []string, opts ...Option) (*Conn, error) {
	c := &Conn{conns: map[string]*grpc.ClientConn{}, moved: make(chan struct{})}
	for _, a := range addrs {
		if a = strings.TrimSpace(a); a != "" {
			c.addrs = append(c.addrs, WithPort(a))
		}
	}
	if len(c.addrs) == 0 {
		return nil, errors.New("no controller address")
	}
	c.opts = []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxRecvMsgSize)),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.DefaultConfig, MinConnectTimeout: connectTimout}),
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// SplitAddrs splits a comma-separated list of controller addresses.
func SplitAddrs(list string) []string {
	var out []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// WithPort adds the default port to an address without one.
func WithPort(a string) string {
	if _, _, err := net.SplitHostPort(a); err == nil {
		return a
	}
	return net.JoinHostPort(strings.Trim(a, "[]"), DefaultPort)
}

// CheckHostPort says what is wrong with addr as a host and port to dial
// (a Raft or API address a controller is given): a host and a port from
// 1 to 65535; nil when nothing is.
func CheckHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("%q is not HOST:PORT", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: the port is not a number from 1 to 65535", addr)
	}
	return nil
}

// Addrs returns the configured addresses.
func (c *Conn) Addrs() []string { return append([]string(nil), c.addrs...) }

// Leader returns the address of the replica believed to lead ("" unknown).
func (c *Conn) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// Close closes every connection.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		close(c.moved) // streams that follow the leader end
	}
	c.closed = true
	var errs []error
	for a, cc := range c.conns {
		errs = append(errs, cc.Close())
		delete(c.conns, a)
	}
	return errors.Join(errs...)
}

// Reset closes every connection without closing the Conn: the next call
// dials again. A client whose TLS certificate was renewed calls it, so
// that its calls present the new certificate (a connection keeps the one
// it was made with); calls in flight fail, as on a lost connection.
func (c *Conn) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for a, cc := range c.conns {
		cc.Close()
		delete(c.conns, a)
	}
}

// Stale returns a context whose reads may be answered by whichever replica
// is reached, from its own state, which may lag the leader's.
func Stale(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, readHeader, "stale")
}

func (c *Conn) conn(addr string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if cc := c.conns[addr]; cc != nil {
		return cc, nil
	}
	cc, err := grpc.NewClient(addr, c.opts...)
	if err != nil {
		return nil, fmt.Errorf("controller address %q: %w", addr, err)
	}
	c.conns[addr] = cc
	return cc, nil
}

// order returns the addresses to try: the believed leader, then the
// configured ones.
func (c *Conn) order() []string {
	c.mu.Lock()
	leader := c.leader
	c.mu.Unlock()
	out := make([]string, 0, len(c.addrs)+1)
	if leader != "" {
		out = append(out, leader)
	}
	for _, a := range c.addrs {
		if a != leader {
			out = append(out, a)
		}
	}
	return out
}

// learn records a replica's word on who leads.
func (c *Conn) learn(addr string) {
	if addr == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if addr != c.leader && !c.closed {
		close(c.moved)
		c.moved = make(chan struct{})
	}
	c.leader = addr
}

// forget drops a leader belief that proved wrong.
func (c *Conn) forget(addr string) {
	c.mu.Lock()
	if c.leader == addr {
		c.leader = ""
	}
	c.mu.Unlock()
}

// reads are the calls that change nothing.
var reads = map[string]bool{
	phalanxv1.ControllerService_GetJob_FullMethodName:              true,
	phalanxv1.ControllerService_ListJobs_FullMethodName:            true,
	phalanxv1.ControllerService_ListNodes_FullMethodName:           true,
	phalanxv1.ControllerService_ListPartitions_FullMethodName:      true,
	phalanxv1.ControllerService_GetFairShare_FullMethodName:        true,
	phalanxv1.ControllerService_ListControllers_FullMethodName:     true,
	phalanxv1.ControllerService_GetControllerStatus_FullMethodName: true,
}

// Invoke implements grpc.ClientConnInterface with failover. When the
// deadline ends it, a read reports what the replicas last answered (no
// leader, unreachable), which says more than the deadline; a write whose
// last attempt was cut short reports that, since it may have taken effect.
// A replica that refuses the credential (UNAUTHENTICATED: its cluster key
// or CA may be the one that differs) is not asked again during the call;
// its refusal is the answer once no other replica may still take it.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	var last, said error // the last error, and the last that a replica answered
	out := func() error {
		if said != nil && reads[method] {
			return said
		}
		return last
	}
	wait := firstBackoff
	redirects := 0
	var refusedSince time.Time
	var denied error              // a replica's refusal of the credential
	deniedBy := map[string]bool{} // the replicas that refused it
	for {
		redirected, allRefused := false, true
		for _, addr := range c.order() {
			if deniedBy[addr] {
				continue
			}
			before := c.Leader()
			err := c.invokeOne(ctx, addr, method, args, reply, opts)
			if err == nil {
				return nil
			}
			last = err
			if !errors.Is(err, errSlow) && status.Code(err) != codes.DeadlineExceeded && !unreachable(err) {
				said = err
			}
			if ctx.Err() != nil {
				return out()
			}
			if status.Code(err) == codes.Unauthenticated {
				// Its key or CA may be the one that differs: ask the others.
				denied, deniedBy[addr] = err, true
				c.forget(addr)
				continue
			}
			if !retryable(err) {
				return err
			}
			allRefused = allRefused && (unreachable(err) || notMember(err) || deniedBy[leaderNamed(err)])
			if l := c.Leader(); l != "" && l != before && l != addr && !deniedBy[l] && redirects < maxRedirects {
				redirected = true // a replica named the leader: go there now
				redirects++
				break
			}
		}
		if redirected {
			continue
		}
		if denied != nil && allRefused {
			return denied // the others are down or outside the cluster
		}
		switch {
		case !allRefused:
			refusedSince = time.Time{}
		case refusedSince.IsZero():
			refusedSince = time.Now()
		case time.Since(refusedSince) >= refusedGrace:
			if notMember(said) {
				return said // an answer says more than a refused connection
			}
			return last
		}
		select {
		case <-ctx.Done():
			return out()
		case <-time.After(wait):
		}
		wait = min(2*wait, maxBackoff)
	}
}

// invokeOne makes one attempt at addr, with its share of the deadline.
func (c *Conn) invokeOne(ctx context.Context, addr, method string, args, reply any, opts []grpc.CallOption) error {
	cc, err := c.conn(addr)
	if errors.Is(err, errClosed) {
		return err
	}
	if err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	tctx, cancel, share := attemptContext(ctx)
	defer cancel()
	actx, leave := context.WithCancelCause(tctx)
	defer leave(nil)
	if len(c.addrs) > 1 {
		probe := time.AfterFunc(probeAfter, func() { c.leaveIfAnotherLeads(actx, addr, leave) })
		defer probe.Stop()
	}
	var header metadata.MD
	err = cc.Invoke(actx, method, args, reply, append(opts, grpc.Header(&header))...)
	if err == nil {
		if l := header.Get(leaderHeader); len(l) > 0 {
			c.learn(l[0])
		}
		return nil
	}
	var moved *movedError
	if errors.As(context.Cause(actx), &moved) && ctx.Err() == nil {
		return moved
	}
	// Its share ran out: try another. The replica may say so first, having
	// been sent the attempt's deadline, a moment before actx's own timer
	// fires; with time left for the call, that is the share too.
	if ctx.Err() == nil && (actx.Err() != nil || status.Code(err) == codes.DeadlineExceeded) {
		c.forget(addr)
		return &slowError{addr: addr, share: share}
	}
	c.noteFailure(addr, err)
	return err
}

// noteFailure learns from a failed call: a NotLeader names the leader, any
// other unavailability discredits addr as leader.
func (c *Conn) noteFailure(addr string, err error) {
	if nl := NotLeader(err); nl != nil && nl.LeaderAddr != "" && nl.LeaderAddr != addr {
		c.learn(nl.LeaderAddr)
		return
	}
	if status.Code(err) == codes.Unavailable {
		c.forget(addr)
	}
}

// attemptContext gives one replica half of the time left, but at least
// minAttempt (or all of it, when less is left).
func attemptContext(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	d, ok := ctx.Deadline()
	if !ok {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, 0
	}
	left := time.Until(d)
	share := max(left/2, min(left, minAttempt))
	ctx, cancel := context.WithTimeout(ctx, share)
	return ctx, cancel, share
}

// unreachable reports whether err says nothing answered at all (no
// connection), as opposed to a replica that answered without a leader or
// did not answer in time.
func unreachable(err error) bool {
	return status.Code(err) == codes.Unavailable && NotLeader(err) == nil && !errors.Is(err, errSlow)
}

// notMember reports whether err is the answer of a replica outside the
// cluster that knows no leader: it counts as a refusal, not as an
// election to wait out.
func notMember(err error) bool {
	nl := NotLeader(err)
	return nl != nil && nl.NotMember && nl.LeaderAddr == ""
}

// leaderNamed returns the leader a NotLeader answer names ("" none).
func leaderNamed(err error) string {
	if nl := NotLeader(err); nl != nil {
		return nl.LeaderAddr
	}
	return ""
}

// retryable reports whether another replica might answer: this one is
// unreachable, not the leader, or too slow.
func retryable(err error) bool {
	return status.Code(err) == codes.Unavailable
}

// errClosed is the error of a call on a closed Conn. Its code is
// CANCELED, as a closed grpc.ClientConn's, so that it is not retried.
var errClosed = status.Error(codes.Canceled, "apiclient: connection closed")

// errSlow marks a replica that did not answer within its share.
var errSlow = errors.New("no answer in time")

type slowError struct {
	addr  string
	share time.Duration
}

func (e *slowError) Error() string {
	return fmt.Sprintf("controller at %s did not answer within %s", e.addr, e.share.Round(time.Millisecond))
}

func (e *slowError) Is(target error) bool { return target == errSlow }

// GRPCStatus makes a slow replica an UNAVAILABLE one for callers.
func (e *slowError) GRPCStatus() *status.Status { return status.New(codes.Unavailable, e.Error()) }

// NotLeader returns the NotLeader detail of an error, or nil.
func NotLeader(err error) *phalanxv1.NotLeader {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if nl, ok := d.(*phalanxv1.NotLeader); ok {
			return nl
		}
	}
	return nil
}
