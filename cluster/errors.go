package cluster

import "errors"

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
)
