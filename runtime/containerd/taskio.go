package containerd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/namespaces"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// A container's output and its fence are kept by its I/O keeper: the
// agent's own executable, started by the container's shim as a containerd
// "logging binary" (cio.BinaryIO). The shim hands it the container's
// stdout and stderr pipes, and it lives as long as the container, with or
// without the agent: output written while the agent is down or being
// upgraded is not lost, and a container is fenced like a process task.
//
// The keeper opens the Spec's output files as the task's user
// (runtime.OpenOutput), never as root, and copies the pipes into them.
// When the task has a lease it also reads the node's lease file every
// runtime.LeasePoll; once the lease has ended it records the fence in the
// task's fence file (<state>/<id>.fenced) and has containerd kill every
// process of the container, until the container's task has stopped.
//
// The shim passes the URI's query as arguments, pairs of key and value in
// no fixed order, and the container's ID and namespace in the environment.
// taskIOKey among the keys tells the executable to run as a keeper.

const (
	taskIOKey      = "phalanx-task-io" // value: the format's version
	taskIOVersion  = "1"
	taskIOStdout   = "stdout"
	taskIOStderr   = "stderr"
	taskIOUID      = "uid"
	taskIOGID      = "gid"
	taskIOLease    = "lease"   // the node's lease file; absent: no fence
	taskIOFenced   = "fenced"  // the task's fence file
	taskIOLog      = "log"     // where the keeper writes what goes wrong
	taskIOAddress  = "address" // containerd's socket, to kill a fenced task
	taskIOPipeOut  = 3         // the container's stdout, read end
	taskIOPipeErr  = 4         // the container's stderr, read end
	taskIOReady    = 5         // closed once the keeper is ready
	fencedFileExt  = ".fenced"
	fenceKillLimit = 2 * time.Second // one attempt to reach containerd
)

// RunTaskIOIfAsked runs the process as a container's I/O keeper, and exits,
// when a containerd shim started it as one; otherwise it returns at once.
// The agent's main calls it first thing, as tests' TestMain (or init) do
// when their runtime starts containers.
func RunTaskIOIfAsked() {
	id := os.Getenv("CONTAINER_ID")
	if id == "" {
		return
	}
	args, ok := taskIOArgs(os.Args[1:])
	if !ok || args[taskIOKey] == "" {
		return
	}
	os.Exit(runTaskIO(id, os.Getenv("CONTAINER_NAMESPACE"), args))
}

// taskIOArgs reads the shim's arguments: key, value, key, value...
func taskIOArgs(argv []string) (map[string]string, bool) {
	if len(argv)%2 != 0 {
		return nil, false
	}
	args := make(map[string]string, len(argv)/2)
	for i := 0; i < len(argv); i += 2 {
		args[argv[i]] = argv[i+1]
	}
	return args, true
}

// taskIO returns the creator of a task's I/O: the keeper at exe, told what
// spec needs, and the lease file when the task is fenced.
func (r *Runtime) taskIO(spec runtime.Spec, lease string) (cio.Creator, error) {
	args := map[string]string{
		taskIOKey: taskIOVersion, taskIOStdout: spec.Stdout, taskIOStderr: spec.Stderr,
		taskIOUID: strconv.Itoa(spec.UID), taskIOGID: strconv.Itoa(spec.GID), taskIOAddress: r.address,
	}
	if r.dir != "" {
		args[taskIOLog] = filepath.Join(r.dir, spec.ID+".io.log")
		args[taskIOFenced] = fencedPath(r.dir, spec.ID)
	}
	if lease != "" {
		args[taskIOLease] = lease
	}
	// The URI is checked here, not when the shim would fail on it.
	if _, err := cio.LogURIGenerator("binary", r.taskIOExe, args); err != nil {
		return nil, fmt.Errorf("task %q: its I/O keeper: %w", spec.ID, err)
	}
	return cio.BinaryIO(r.taskIOExe, args), nil
}

func fencedPath(dir, id string) string { return filepath.Join(dir, id+fencedFileExt) }

// runTaskIO is the keeper's main.
func runTaskIO(id, ns string, args map[string]string) int {
	logOut := io.Writer(os.Stderr)
	if p := args[taskIOLog]; p != "" {
		if f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			defer f.Close()
			logOut = f
		}
	}
	log := slog.New(slog.NewTextHandler(logOut, nil)).With("task", id)
	uid, err1 := strconv.Atoi(args[taskIOUID])
	gid, err2 := strconv.Atoi(args[taskIOGID])
	if err1 != nil || err2 != nil {
		uid, gid = 65534, 65534 // never root's by mistake
		log.Error("no usable uid or gid; output is written as nobody", "uid", args[taskIOUID], "gid", args[taskIOGID])
	}
	stdout, stderr := keeperOutputs(args[taskIOStdout], args[taskIOStderr], uid, gid, log)
	defer stdout.Close()
	defer stderr.Close()
	os.NewFile(taskIOReady, "ready").Close()

	var copies sync.WaitGroup
	for _, c := range []struct {
		fd   uintptr
		name string
		to   *os.File
	}{{taskIOPipeOut, "stdout", stdout}, {taskIOPipeErr, "stderr", stderr}} {
		copies.Add(1)
		go func() {
			defer copies.Done()
			if _, err := io.Copy(c.to, os.NewFile(c.fd, c.name)); err != nil {
				log.Error("copying the task's output", "stream", c.name, "err", err)
			}
		}()
	}
	done := make(chan struct{})
	if lease := args[taskIOLease]; lease != "" {
		go fenceContainer(fenceTarget{id: id, ns: ns, address: args[taskIOAddress], fenced: args[taskIOFenced]}, lease, log, done)
	}
	copies.Wait()
	close(done)
	return 0
}

// keeperOutputs opens the task's output files as its user; a file that
// cannot be opened (the agent opened it before the start, so someone
// changed it since) discards its stream, with an error in the log.
func keeperOutputs(outPath, errPath string, uid, gid int, log *slog.Logger) (stdout, stderr *os.File) {
	open := func(path string) *os.File {
		f, err := runtime.OpenOutput(path, uid, gid)
		if err != nil {
			log.Error("the task's output is discarded", "path", path, "err", err)
			f, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		}
		return f
	}
	stdout = open(outPath)
	if filepath.Clean(outPath) == filepath.Clean(errPath) {
		// Two descriptors on one file, both appending: the streams share it.
		dup, err := syscall.Dup(int(stdout.Fd()))
		if err == nil {
			return stdout, os.NewFile(uintptr(dup), outPath)
		}
	}
	return stdout, open(errPath)
}

// fenceTarget is the container a keeper fences.
type fenceTarget struct {
	id, ns, address string
	fenced          string // the fence file, or empty
}

// fenceContainer reads the lease every runtime.LeasePoll until done; once
// it has ended, it records the fence and kills the container's processes
// until its task has stopped.
func fenceContainer(t fenceTarget, lease string, log *slog.Logger, done <-chan struct{}) {
	tick := time.NewTicker(runtime.LeasePoll)
	defer tick.Stop()
	fenced, stopped := false, false
	watch := runtime.NewLeaseWatch(lease)
	var client *containerd.Client
	defer func() {
		if client != nil {
			client.Close()
		}
	}()
	for {
		if !fenced {
			if ended, why := watch.Ended(runtime.BootClock()); ended {
				fenced = true
				log.Warn("killing the container: the node's lease has ended", "why", why)
				if t.fenced != "" {
					if err := os.WriteFile(t.fenced, []byte(why+"\n"), 0o600); err != nil {
						log.Error("recording the fence", "err", err)
					}
				}
			}
		}
		if fenced && !stopped {
			var err error
			stopped, client, err = killContainer(t, client)
			if err != nil {
				log.Error("killing the fenced container; trying again", "err", err)
			}
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// killContainer sends SIGKILL to every process of t's container through
// containerd, connecting first if client is nil; stopped is true once the
// container's task has stopped or is gone.
func killContainer(t fenceTarget, client *containerd.Client) (stopped bool, _ *containerd.Client, err error) {
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), t.ns), fenceKillLimit)
	defer cancel()
	if client == nil {
		if client, err = containerd.New(t.address, containerd.WithDefaultNamespace(t.ns)); err != nil {
			return false, nil, err
		}
	}
	c, err := client.LoadContainer(ctx, t.id)
	if err == nil {
		var task containerd.Task
		if task, err = c.Task(ctx, nil); err == nil {
			var st containerd.Status
			if st, err = task.Status(ctx); err == nil && st.Status == containerd.Stopped {
				return true, client, nil
			}
			err = task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll)
		}
	}
	if errdefs.IsNotFound(err) {
		return true, client, nil
	}
	return false, client, err
}
