package process

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// ShimName is the supervisor's argv[0]: `ps` shows "phalanx-shim <task ID>"
// for each plain-process task, and a binary that finds it in os.Args[0]
// runs as the supervisor (RunShimIfAsked).
const ShimName = "phalanx-shim"

// The supervisor's descriptors, as the runtime passes them (ExtraFiles).
const (
	shimSpecFD   = 3 // read: the shimSpec, JSON, up to EOF
	shimStdoutFD = 4 // the task's stdout, opened by the agent as the task's user
	shimStderrFD = 5 // the task's stderr (the same file as stdout, or another)
	shimStatusFD = 6 // write: "ok <pgid>\n" once the task runs, else "error: <why>\n"
)

// shimSpecVersion is the version of shimSpec this package writes and
// reads. A supervisor refuses a spec of a later version: one installed
// apart from the agent (phalanx-shim) and older than it would leave out
// what it does not know (a lease it must enforce).
const shimSpecVersion = 1

// shimSpec is what the supervisor needs to start a task.
type shimSpec struct {
	// V is shimSpecVersion; 0 (absent) from agents that wrote none.
	V         int           `json:"v,omitempty"`
	ID        string        `json:"id"`
	Argv      []string      `json:"argv"`
	Env       []string      `json:"env"`
	Dir       string        `json:"dir"`
	Cred      *shimCred     `json:"cred,omitempty"`
	RecordDir string        `json:"record_dir"`
	MaxPoll   time.Duration `json:"max_poll"`
	// Lease is the node's lease file (lease.go): the supervisor kills the
	// task once it has ended. Empty: the task has no lease.
	Lease string `json:"lease,omitempty"`
}

type shimCred struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups"`
}

// RunShimIfAsked runs this process as a task's supervisor, and exits, when
// it was started as one (os.Args[0] is ShimName); otherwise it returns at
// once. phalanx-agent calls it first thing in main, and so must the
// TestMain of every test binary that starts plain-process tasks: the
// runtime starts supervisors by running its own executable again.
func RunShimIfAsked() {
	if filepath.Base(os.Args[0]) != ShimName {
		return
	}
	os.Exit(runShim())
}

// runShim is the supervisor: it starts the task in a process group of its
// own, records it, tells the agent, waits for the group to end, records
// how it ended, and exits. It runs in a session of its own, so it outlives
// the agent and what kills the agent's process group.
func runShim() int {
	// A SIGHUP meant for the daemons (pkill -HUP -f phalanx-, after a
	// certificate change) must not end the task's supervisor, and so the
	// task. Caught, not ignored: the task starts with the default.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	status := os.NewFile(shimStatusFD, "status")
	fail := func(format string, args ...any) int {
		msg := fmt.Sprintf(format, args...)
		fmt.Fprintf(os.Stderr, "%s: %s\n", ShimName, msg)
		fmt.Fprintf(status, "error: %s\n", msg)
		return 1
	}
	var spec shimSpec
	specFile := os.NewFile(shimSpecFD, "spec")
	b, err := io.ReadAll(io.LimitReader(specFile, 64<<20))
	specFile.Close()
	if err != nil {
		return fail("reading the task spec: %v", err)
	}
	if err := json.Unmarshal(b, &spec); err != nil || len(spec.Argv) == 0 || spec.ID == "" || spec.RecordDir == "" {
		return fail("invalid task spec (%v)", err)
	}
	if spec.V > shimSpecVersion {
		return fail("task spec version %d, this %s knows %d: install phalanx-shim from the same release as phalanx-agent", spec.V, ShimName, shimSpecVersion)
	}
	stdout, stderr := os.NewFile(shimStdoutFD, "stdout"), os.NewFile(shimStderrFD, "stderr")
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env = spec.Env
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c := spec.Cred; c != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
	}
	err = cmd.Start()
	stdout.Close()
	stderr.Close()
	if err != nil {
		return fail("start %s: %v", spec.Argv[0], err)
	}
	pgid := cmd.Process.Pid
	self, _ := startTime(os.Getpid())
	rec := record{V: recordVersion, ID: spec.ID, PGID: pgid, ShimPID: os.Getpid(), ShimStart: self, Boot: runtime.BootID(), Fenced: spec.Lease != ""}
	if err := writeJSON(recordPath(spec.RecordDir, spec.ID), rec); err != nil {
		// Unrecorded, the task could not be found again after an agent
		// restart: do not let it run.
		syscall.Kill(-pgid, syscall.SIGKILL)
		cmd.Wait()
		return fail("recording the task: %v", err)
	}
	fmt.Fprintf(status, "ok %d\n", pgid)
	status.Close()

	var fenced atomic.Bool
	if spec.Lease != "" {
		done := make(chan struct{})
		defer close(done)
		go fence(spec.Lease, pgid, &fenced, done)
	}
	werr := cmd.Wait()
	st := exitRecord{V: recordVersion}
	ws, ok := syscall.WaitStatus(0), false
	if cmd.ProcessState != nil {
		ws, ok = cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	if ok {
		s := exitStatus(ws)
		st.Code, st.Signal = s.Code, int(s.Signal)
	} else {
		fmt.Fprintf(os.Stderr, "%s: wait for task %s: %v\n", ShimName, spec.ID, werr)
		return 1 // no .exit: the agent reports the task lost
	}
	pause := firstPoll
	for groupAlive(pgid) {
		time.Sleep(pause)
		pause = min(2*pause, max(spec.MaxPoll, firstPoll))
	}
	st.Fenced = fenced.Load()
	if err := writeJSON(exitPath(spec.RecordDir, spec.ID), st); err != nil {
		fmt.Fprintf(os.Stderr, "%s: recording the end of task %s (code %d, signal %d): %v\n", ShimName, spec.ID, st.Code, st.Signal, err)
		return 1
	}
	return 0
}

// parseStatus reads the supervisor's status line.
func parseStatus(line string) (pgid int, err error) {
	if rest, ok := strings.CutPrefix(line, "ok "); ok {
		pgid, err := strconv.Atoi(rest)
		if err != nil || pgid <= 1 {
			return 0, fmt.Errorf("supervisor answered %q", line)
		}
		return pgid, nil
	}
	if rest, ok := strings.CutPrefix(line, "error: "); ok {
		return 0, fmt.Errorf("%s", rest)
	}
	return 0, fmt.Errorf("supervisor exited without starting the task (%q)", line)
}

// ShimBeside is the phalanx-shim executable in the directory of exe (the
// agent's own), or "" when there is none there.
func ShimBeside(exe string) string {
	p := filepath.Join(filepath.Dir(exe), ShimName)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return p
	}
	return ""
}
