package process

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Name is what (*Runtime).Name returns.
const Name = "process"

// DefaultMaxPoll is the longest pause between two checks of whether a task's
// process group is empty.
const DefaultMaxPoll = 100 * time.Millisecond

// Runtime starts tasks as process groups on the host, each under a
// supervisor (shim.go) that outlives the agent.
type Runtime struct {
	dir     string
	shim    string
	maxPoll time.Duration

	leaseMu  sync.Mutex  // one Lease at a time
	leased   atomic.Bool // Lease was called: tasks started now are fenced
	unfenced atomic.Bool // Recover found a task its supervisor does not fence
}

var (
	_ runtime.Runtime   = (*Runtime)(nil)
	_ runtime.Recoverer = (*Runtime)(nil)
)

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

// WithShim names the executable to run as a task's supervisor: one whose
// main calls RunShimIfAsked first, such as phalanx-shim (cmd/phalanx-shim,
// which links this package and little else). The default is this
// process's own executable.
func WithShim(path string) Option {
	return func(r *Runtime) {
		if path != "" {
			r.shim = path
		}
	}
}

// New returns a process runtime keeping its task records in dir (created
// when needed; the agent gives <state dir>/process). A runtime made
// later on the same dir finds the tasks again (Recover).
func New(dir string, opts ...Option) *Runtime {
	r := &Runtime{dir: dir, maxPoll: DefaultMaxPoll}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Name returns "process".
func (r *Runtime) Name() string { return Name }

// shimStartTimeout bounds the supervisor's start when ctx has no deadline.
const shimStartTimeout = time.Minute

// Start starts spec.Argv under a supervisor, in a new process group, and
// returns once the process runs. The process and its supervisor outlive
// ctx and the agent.
func (r *Runtime) Start(ctx context.Context, spec runtime.Spec) (runtime.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if r.dir == "" {
		return nil, fmt.Errorf("task %q: the process runtime has no state directory: %w", spec.ID, cluster.ErrInvalid)
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, fmt.Errorf("task %q: %w", spec.ID, err)
	}
	if _, err := os.Stat(recordPath(r.dir, spec.ID)); err == nil {
		return nil, fmt.Errorf("task %q: a task of that ID is on record already (%s): %w", spec.ID, recordPath(r.dir, spec.ID), cluster.ErrConflict)
	}
	shim := r.shim
	if shim == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("task %q: finding the supervisor: %w", spec.ID, err)
		}
		shim = exe
	}
	cred := credential(spec.UID, spec.GID)
	stdout, stderr, err := openOutputs(spec, cred)
	if err != nil {
		return nil, err
	}
	defer closeAll(stdout, stderr)
	ss := shimSpec{V: shimSpecVersion, ID: spec.ID, Argv: spec.Argv, Env: environment(spec), Dir: spec.WorkDir,
		Cred: shimCredential(cred), RecordDir: r.dir, MaxPoll: r.maxPoll}
	if r.leased.Load() {
		ss.Lease = leasePath(r.dir)
	}
	body, err := json.Marshal(ss)
	if err != nil {
		return nil, err
	}
	return r.startShim(ctx, spec.ID, shim, body, stdout, stderr)
}

// startShim runs the supervisor with the task's spec and outputs, and
// waits for its word that the task runs.
func (r *Runtime) startShim(ctx context.Context, id, shim string, body []byte, stdout, stderr *os.File) (runtime.Task, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer specW.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		return nil, err
	}
	defer statusR.Close()
	logf, err := os.OpenFile(logPath(r.dir, id), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		specR.Close()
		statusW.Close()
		return nil, fmt.Errorf("task %q: supervisor log: %w", id, err)
	}
	cmd := &exec.Cmd{
		Path:        shim,
		Args:        []string{ShimName, id},
		Env:         []string{},
		Dir:         "/",
		Stderr:      logf,
		ExtraFiles:  []*os.File{specR, stdout, stderr, statusW},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	specR.Close()
	statusW.Close()
	logf.Close()
	if err != nil {
		removeRecords(r.dir, id)
		return nil, fmt.Errorf("task %q: start its supervisor %s: %w", id, shim, err)
	}
	specW.Write(body) // a failure shows as the supervisor's error below
	specW.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(shimStartTimeout)
	}
	statusR.SetReadDeadline(deadline)
	line, rerr := bufio.NewReader(statusR).ReadString('\n')
	pgid, err := parseStatus(strings.TrimSpace(line))
	if err != nil {
		if rerr != nil && line == "" {
			err = fmt.Errorf("no word from the supervisor: %w", rerr)
		}
		cmd.Process.Kill()
		cmd.Wait()
		r.forget(id)
		return nil, fmt.Errorf("task %q: %w", id, err)
	}
	t := newTask(id, pgid, r)
	go func() {
		cmd.Wait()
		t.supervisorExited()
	}()
	return t, nil
}

// forget kills whatever a failed start left recorded and removes its
// records.
func (r *Runtime) forget(id string) {
	if rec, err := readRecord(recordPath(r.dir, id)); err == nil && rec.Boot == runtime.BootID() {
		syscall.Kill(-rec.PGID, syscall.SIGKILL)
	}
	removeRecords(r.dir, id)
}

func shimCredential(c *syscall.Credential) *shimCred {
	if c == nil {
		return nil
	}
	return &shimCred{UID: c.Uid, GID: c.Gid, Groups: c.Groups}
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
