package controller

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// notLeaderError is cluster.ErrNotLeader with the leader this replica knows
// of, if any; the gRPC edge turns it into a NotLeader detail.
type notLeaderError struct {
	leaderID, leaderAddr string
	// notMember is this replica's ID when it is not in its own Raft
	// configuration: it cannot answer for the cluster at all.
	notMember string
}

func (e *notLeaderError) Error() string {
	switch {
	case e.notMember != "":
		return fmt.Sprintf("controller %s is not a member of the cluster (it waits to be added with scontrol raft add, or was removed): ask another replica", e.notMember)
	case e.leaderAddr != "":
		return fmt.Sprintf("this controller is not the leader; the leader is %s at %s", e.leaderID, e.leaderAddr)
	case e.leaderID != "":
		return fmt.Sprintf("this controller is not the leader; the leader is %s (address not known yet)", e.leaderID)
	}
	return "no controller leads right now (an election is under way, or this controller is cut off from a majority): retry in a moment"
}

func (e *notLeaderError) Unwrap() error { return cluster.ErrNotLeader }

// toStatus maps a domain error to a gRPC status, once, at the edge. The
// message is the error's own: it already says what is wrong.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err // already a status (a forwarded call's answer)
	}
	var nl *notLeaderError
	if errors.As(err, &nl) {
		st := status.New(codes.Unavailable, nl.Error())
		if d, derr := st.WithDetails(&phalanxv1.NotLeader{LeaderId: nl.leaderID, LeaderAddr: nl.leaderAddr, NotMember: nl.notMember != ""}); derr == nil {
			st = d
		}
		return st.Err()
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
	case errors.Is(err, cluster.ErrLimit):
		code = codes.ResourceExhausted
	case errors.Is(err, cluster.ErrPermission):
		code = codes.PermissionDenied
	case errors.Is(err, cluster.ErrUnauthenticated):
		code = codes.Unauthenticated
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Error(code, err.Error())
}
