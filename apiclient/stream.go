package apiclient

import (
	"context"
	"slices"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// FollowLeader is a call option for a stream that only the leader serves
// (an agent's assignments): the stream ends, UNAVAILABLE, as soon as the
// connection learns that another replica leads, from any call's answer,
// so that the caller opens it again there. Without it, a stream open on a
// leader that stops answering without closing its connections (a stopped
// process, a frozen host, a network that drops packets) waits for that
// replica for as long as it is stuck, while the new leader's changes never
// reach the caller.
func FollowLeader() grpc.CallOption { return followLeader{} }

type followLeader struct{ grpc.EmptyCallOption }

// NewStream implements grpc.ClientConnInterface. A stream is opened on the
// believed leader (or the first replica that accepts it); its errors teach
// the connection who leads, so the caller's next NewStream goes there.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	follow := slices.ContainsFunc(opts, func(o grpc.CallOption) bool { _, ok := o.(followLeader); return ok })
	var last error
	for _, addr := range c.order() {
		cc, err := c.conn(addr)
		if err != nil {
			last = err
			continue
		}
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if follow {
			sctx, cancel = context.WithCancel(ctx)
		}
		cs, err := cc.NewStream(sctx, desc, method, opts...)
		if err == nil {
			s := &stream{ClientStream: cs, c: c, addr: addr, cancel: cancel}
			if follow {
				go s.endWhenLeaderMoves(sctx)
			}
			return s, nil
		}
		cancel()
		last = err
		c.noteFailure(addr, err)
		if ctx.Err() != nil || !retryable(err) {
			return nil, err
		}
	}
	return nil, last
}

// stream learns from the errors of a stream.
type stream struct {
	grpc.ClientStream
	c      *Conn
	addr   string
	cancel context.CancelFunc
	moved  atomic.Pointer[string] // the leader that ended it (FollowLeader)
}

func (s *stream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.cancel() // the stream is over: release its context
		if to := s.moved.Load(); to != nil {
			err = status.Errorf(codes.Unavailable, "controller at %s no longer leads (%s does): open the stream again", s.addr, *to)
		}
		s.c.noteFailure(s.addr, err)
	}
	return err
}

// endWhenLeaderMoves cancels the stream once the connection believes a
// replica other than the stream's leads, or is closed; it returns when the
// stream's context ends.
func (s *stream) endWhenLeaderMoves(ctx context.Context) {
	for {
		s.c.mu.Lock()
		leader, moved, closed := s.c.leader, s.c.moved, s.c.closed
		s.c.mu.Unlock()
		if closed {
			s.cancel()
			return
		}
		if leader != "" && leader != s.addr {
			s.moved.Store(&leader)
			s.cancel()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-moved:
		}
	}
}
