package cluster

import (
	"errors"
	"fmt"
)

// Sentinel errors shared by every layer. Wrap them with context
// (fmt.Errorf("job %d: %w", id, ErrNotFound)); the gRPC edge maps them to
// status codes once, and the client maps them back.
var (
	// ErrNotFound: the job, node or partition does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the request is malformed or out of range.
	ErrInvalid = errors.New("invalid request")
	// ErrUnsatisfiable: no configuration of the cluster can ever run the job.
	// The text is Slurm's, capitalised as users know it.
	ErrUnsatisfiable = errors.New("Requested node configuration is not available")
	// ErrNotLeader: this controller is not the Raft leader and cannot forward.
	ErrNotLeader = errors.New("not the leader")
	// ErrConflict: the change conflicts with the current state (e.g. a plan
	// computed on an older snapshot).
	ErrConflict = errors.New("conflict with current state")
	// ErrLimit: a configured limit is reached (MaxJobCount); the same
	// request may succeed later.
	ErrLimit = errors.New("limit reached")
	// ErrPermission: the caller is known but may not do this (another
	// user's job, an administrator's command).
	ErrPermission = errors.New("permission denied")
	// ErrUnauthenticated: the call carries no valid credential.
	ErrUnauthenticated = errors.New("unauthenticated")
)

// Error is a user-facing error of one of the kinds above whose message is
// complete by itself: errors.Is matches the kind, and the text does not
// repeat the kind's own words ("invalid request: ...").
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap makes errors.Is(e, e.Kind) true.
func (e *Error) Unwrap() error { return e.Kind }

// Errorf formats a user-facing error of the given kind.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
