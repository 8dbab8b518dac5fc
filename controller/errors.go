package controller

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// toStatus maps a domain error to a gRPC status, once, at the edge. The
// message is the error's own: it already says what is wrong.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	code := codes.Internal
	switch {
	case errors.Is(err, cluster.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, cluster.ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, cluster.ErrUnsatisfiable):
		code = codes.FailedPrecondition
	case errors.Is(err, cluster.ErrNotLeader):
		code = codes.Unavailable
	case errors.Is(err, cluster.ErrConflict):
		code = codes.Aborted
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Error(code, err.Error())
}
