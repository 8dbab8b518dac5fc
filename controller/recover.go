package controller

import (
	"context"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A panic in an API handler is a bug of that call: it ends the call with
// Internal and is logged with its stack, instead of taking the replica
// down with it (in phx dev, the whole cluster). The FSM and Raft do not run
// in handlers: a panic there still stops the replica, as it must, rather
// than let it apply part of the log.

func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.handlerPanic(info.FullMethod, r)
		}
	}()
	return handler(ctx, req)
}

func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.handlerPanic(info.FullMethod, r)
		}
	}()
	return handler(srv, ss)
}

func (s *Server) handlerPanic(method string, r any) error {
	s.log.Error("API handler panicked: a bug; the call fails, the replica goes on", "method", method, "panic", r, "stack", string(debug.Stack()))
	return status.Errorf(codes.Internal, "internal error in %s: %v (a bug: the controller's log has the details)", method, r)
}
