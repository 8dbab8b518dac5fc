package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/pki"
)

// Metadata keys of the routing protocol (see the API's package comment).
const (
	// LeaderHeader, in a reply's header, is the leader's API address.
	LeaderHeader = "phalanx-leader"
	// ReadHeader "stale", in a request, asks for a read from the replica
	// called, without making sure it is up to date.
	ReadHeader = "phalanx-read"
	// forwardedHeader marks a call one replica forwarded to another: it is
	// never forwarded again.
	forwardedHeader = "phalanx-forwarded"
)

// route is where a method is served.
type route int

const (
	routeLeader route = iota // by the leader: forwarded there
	routeRead                // by the leader, which confirms it leads; or locally when stale is asked
	routeLocal               // by the replica called
)

var routes = map[string]route{
	phalanxv1.ControllerService_GetJob_FullMethodName:              routeRead,
	phalanxv1.ControllerService_ListJobs_FullMethodName:            routeRead,
	phalanxv1.ControllerService_ListNodes_FullMethodName:           routeRead,
	phalanxv1.ControllerService_ListPartitions_FullMethodName:      routeRead,
	phalanxv1.ControllerService_GetFairShare_FullMethodName:        routeRead,
	phalanxv1.ControllerService_ListEvents_FullMethodName:          routeRead,
	phalanxv1.ControllerService_ListControllers_FullMethodName:     routeLocal,
	phalanxv1.ControllerService_GetControllerStatus_FullMethodName: routeLocal,
	phalanxv1.ControllerService_CreateToken_FullMethodName:         routeLocal, // any replica holds the key
	// Every other method (submits, cancels, membership, the node API) is a
	// write or needs the leader's memory: routeLeader.
}

// routeUnary sends each call where its route says: to the handler here, or
// to the leader.
func (s *Server) routeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := s.access.authenticate(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	r := routes[info.FullMethod]
	if r == routeLocal || (r == routeRead && staleRead(ctx)) || s.ready() {
		// Served here: this is where the call counts against its user.
		if err := s.limit(ctx, info.FullMethod, req); err != nil {
			return nil, err
		}
	}
	if r == routeLocal || (r == routeRead && staleRead(ctx)) {
		return handler(ctx, req)
	}
	if s.ready() {
		if r == routeRead {
			if err := s.verifyLeader(ctx); err != nil {
				return nil, toStatus(err)
			}
		}
		s.tellLeader(ctx, s.apiAddr)
		return handler(ctx, req)
	}
	return s.forward(ctx, info.FullMethod, req)
}

// routeStream serves streams (assignments) on the leader only: agents
// follow the NotLeader answer to it.
func (s *Server) routeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := s.access.authenticate(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if !s.ready() {
		return toStatus(s.notLeader())
	}
	return handler(srv, authStream{ServerStream: ss, ctx: ctx})
}

func staleRead(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get(ReadHeader) {
		if v == "stale" {
			return true
		}
	}
	return false
}

// verifyLeader confirms with a majority that this replica still leads, so
// a read cannot come from a deposed leader that has not noticed yet.
func (s *Server) verifyLeader(ctx context.Context) error {
	if err := waitFuture(ctx, s.raft.raft.VerifyLeader()); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return s.notLeader()
	}
	return nil
}

// tellLeader sets the reply's leader header (best effort).
func (s *Server) tellLeader(ctx context.Context, addr string) {
	if addr != "" {
		_ = grpc.SetHeader(ctx, metadata.Pairs(LeaderHeader, addr))
	}
}

// forward relays a unary call to the leader within the caller's deadline,
// with the caller's Phalanx metadata, and returns the leader's answer. A
// call already forwarded once is not forwarded again: it gets NotLeader,
// and the client retries.
func (s *Server) forward(ctx context.Context, method string, req any) (any, error) {
	in, _ := metadata.FromIncomingContext(ctx)
	if len(in.Get(forwardedHeader)) > 0 {
		return nil, toStatus(s.notLeader())
	}
	id, addr := s.leader()
	if addr == "" || id == s.ID() {
		return nil, toStatus(s.notLeader())
	}
	reply, err := newReply(method)
	if err != nil {
		return nil, toStatus(err)
	}
	out := metadata.Pairs(forwardedHeader, s.ID())
	for k, vs := range in {
		if strings.HasPrefix(k, "phalanx-") && k != forwardedHeader && k != certNodeHeader {
			out.Append(k, vs...)
		}
	}
	if s.cfg.TLS != nil && strings.HasPrefix(method, nodeServicePrefix) {
		if id, ok := auth.FromContext(ctx); ok && id.Kind == auth.KindNode {
			out.Append(certNodeHeader, id.Node) // checked here against its certificate
		}
	}
	conn, err := s.peerConns.get(addr)
	if err != nil {
		return nil, toStatus(err)
	}
	fctx, leave := context.WithCancelCause(metadata.NewOutgoingContext(ctx, out))
	defer leave(nil)
	if !unrepeatable[method] {
		watch := time.AfterFunc(forwardWatchAfter, func() { s.leaveWhenLeaderChanges(fctx, id, leave) })
		defer watch.Stop()
	}
	if err := conn.Invoke(fctx, method, req, reply); err != nil {
		if errors.Is(context.Cause(fctx), errLeaderChanged) && ctx.Err() == nil {
			return nil, toStatus(s.notLeader())
		}
		return nil, err // the leader's status, as it is
	}
	s.tellLeader(ctx, addr)
	return reply, nil
}

// A leader that stops without closing its connections (SIGSTOP, a frozen
// host) would hold a call forwarded to it for the caller's whole deadline,
// long after this replica saw another elected. A forward that has waited
// forwardWatchAfter is left, and answered NotLeader (naming the new leader
// if there is one yet), as soon as this replica takes another replica or
// none for the leader; the caller repeats it there, which Phalanx's calls
// allow (request IDs). Membership changes and leadership transfers are
// left alone: a new leader may be their own doing, and repeated they would
// act again.
const (
	forwardWatchAfter = 250 * time.Millisecond
	forwardWatchEvery = 50 * time.Millisecond
)

var errLeaderChanged = errors.New("the leader changed during the forward")

// unrepeatable are the forwards the watch does not leave.
var unrepeatable = map[string]bool{
	phalanxv1.ControllerService_TransferLeadership_FullMethodName: true,
	phalanxv1.ControllerService_AddController_FullMethodName:      true,
	phalanxv1.ControllerService_RemoveController_FullMethodName:   true,
}

// leaveWhenLeaderChanges ends ctx with errLeaderChanged once the leader is
// no longer the replica id, checking every forwardWatchEvery until ctx
// ends.
func (s *Server) leaveWhenLeaderChanges(ctx context.Context, id string, leave context.CancelCauseFunc) {
	t := time.NewTicker(forwardWatchEvery)
	defer t.Stop()
	for {
		if now, _ := s.leader(); now != id {
			leave(errLeaderChanged)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

var replyTypes sync.Map // method -> protoreflect.MessageType

// newReply makes an empty reply message of a method, from its descriptor.
func newReply(method string) (proto.Message, error) {
	if mt, ok := replyTypes.Load(method); ok {
		return mt.(protoreflect.MessageType).New().Interface(), nil
	}
	svc, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if !ok {
		return nil, fmt.Errorf("method %q: want /service/method", method)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("method %q: %w", method, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok || sd.Methods().ByName(protoreflect.Name(name)) == nil {
		return nil, fmt.Errorf("method %q is not a known RPC", method)
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(sd.Methods().ByName(protoreflect.Name(name)).Output().FullName())
	if err != nil {
		return nil, fmt.Errorf("method %q: %w", method, err)
	}
	replyTypes.Store(method, mt)
	return mt.New().Interface(), nil
}

// peerConns keeps one client connection per other replica's API address.
type peerConns struct {
	creds grpc.DialOption
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func newPeerConns(creds grpc.DialOption) *peerConns {
	return &peerConns{creds: creds, conns: map[string]*grpc.ClientConn{}}
}

// peerTransport is how a replica reaches its peers' APIs: TLS with its
// controller's certificate, or plaintext without TLS.
func peerTransport(m *pki.Material) grpc.DialOption {
	if m == nil {
		return grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(m.ClientConfig()))
}

func (p *peerConns) get(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.conns[addr]; c != nil {
		return c, nil
	}
	// A forwarded answer (GetJob) is as large as a client's: take what they take.
	c, err := grpc.NewClient(addr, p.creds,
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(apiclient.MaxRecvMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("controller at %s: %w", addr, err)
	}
	p.conns[addr] = c
	return c, nil
}

// peerDrain is how long a connection reset leaves open for the calls
// already forwarded on it.
const peerDrain = time.Minute

// reset drops the connections, after peerDrain, so that the next calls
// connect again: a connection keeps the certificate it was made with,
// and the leader checks a forwarding replica's on every node call, so
// after a renewal, a revocation or a new CA the old one may be refused.
func (p *peerConns) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, c := range p.conns {
		time.AfterFunc(peerDrain, func() { c.Close() })
		delete(p.conns, addr)
	}
}

func (p *peerConns) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, c := range p.conns {
		c.Close()
		delete(p.conns, addr)
	}
}

// probeStatus asks the replica at addr for its status, on a connection of
// its own (used before this replica's server runs).
func probeStatus(ctx context.Context, addr string, creds grpc.DialOption) (*phalanxv1.ControllerStatus, error) {
	c, err := grpc.NewClient(addr, creds)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return phalanxv1.NewControllerServiceClient(c).GetControllerStatus(ctx, &phalanxv1.GetControllerStatusRequest{})
}
