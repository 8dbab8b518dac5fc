package process

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// Name is what (*Runtime).Name returns.
const Name = "process"

// DefaultMaxPoll is the longest pause between two checks of whether a task's
// process group is empty.
const DefaultMaxPoll = 100 * time.Millisecond

// Runtime starts tasks as process groups on the host.
type Runtime struct {
	maxPoll time.Duration
}

var _ runtime.Runtime = (*Runtime)(nil)

// Option configures a Runtime.
type Option func(*Runtime)

// WithMaxPoll bounds the pause between two checks of whether a task's process
// group is empty; Wait notices the group's end at most d after it happens.
func WithMaxPoll(d time.Duration) Option {
	return func(r *Runtime) {
		if d > 0 {
			r.maxPoll = d
		}
	}
}

// New returns a process runtime.
func New(opts ...Option) *Runtime {
	r := &Runtime{maxPoll: DefaultMaxPoll}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Name returns "process".
func (r *Runtime) Name() string { return Name }

// Start starts spec.Argv in a new process group and returns once the process
// runs. The process outlives ctx.
func (r *Runtime) Start(ctx context.Context, spec runtime.Spec) (runtime.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	cred := credential(spec.UID, spec.GID)
	stdout, stderr, err := openOutputs(spec, cred)
	if err != nil {
		return nil, err
	}
	defer closeAll(stdout, stderr)

	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env = environment(spec)
	cmd.Dir = spec.WorkDir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("task %q: start %s: %w", spec.ID, spec.Argv[0], err)
	}
	return newTask(spec.ID, cmd, r.maxPoll), nil
}

// environment is spec.Env, never the agent's own (exec would inherit it for
// a nil slice), with CUDA_VISIBLE_DEVICES added when the task has GPUs and
// the agent did not set it.
func environment(spec runtime.Spec) []string {
	env := append([]string{}, spec.Env...)
	if len(spec.GPUs) == 0 {
		return env
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") {
			return env
		}
	}
	ids := make([]string, len(spec.GPUs))
	for i, g := range spec.GPUs {
		ids[i] = strconv.Itoa(g)
	}
	return append(env, "CUDA_VISIBLE_DEVICES="+strings.Join(ids, ","))
}

// credential returns the credentials to run as, or nil to keep the agent's.
// A negative UID or GID keeps the agent's own.
func credential(uid, gid int) *syscall.Credential {
	ownUID, ownGID := os.Getuid(), os.Getgid()
	if uid < 0 {
		uid = ownUID
	}
	if gid < 0 {
		gid = ownGID
	}
	if uid == ownUID && gid == ownGID {
		return nil
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: runtime.Groups(uid, gid)}
}
