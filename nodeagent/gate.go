package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// The pre-start gate. Between preparing a task and starting it, the agent
// checks, in this order:
//
//	gpu      the task's GPUs are present, without uncorrectable errors or
//	         pending repairs, and hold no unresolved XID        (the node's)
//	rdma     for a job on more than one node: the RDMA ports near the
//	         task's GPUs (all ports, if none is near) are up    (the node's)
//	prolog   each of the administrator's Prolog programs exits 0 within
//	         its timeout, run as root with Slurm's prolog
//	         variables                                          (the node's)
//	workdir  the working directory exists and the job's user can enter it
//	         (the prolog may have made it)                      (the user's)
//	output   the output files open for append as the job's user (the user's)
//
// The first failure stops the attempt before the task runs. A failure that
// is the user's is reported FAILED with the check and its message (the job
// fails, the node stays in service). One that is the node's is held as an
// event (like an XID: the node stays drained, with the check and message
// as reason, until an administrator resumes it); the agent waits (at most
// healthAckWait) until a heartbeat reply acknowledged it, so the node is
// drained before the job's end frees it, and then reports the task LOST
// with the same message: the job ends NODE_FAIL, whose attempts are
// retried elsewhere (issue "Fault recovery").

// Check names of the gate; those that drain a node appear in its reason.
const (
	gateGPU     = "prestart-gpu"
	gateRDMA    = "prestart-rdma"
	gateProlog  = "prolog"
	gateWorkDir = "prestart-workdir"
	gateOutput  = "prestart-output"
)

// healthAckWait bounds how long a failed gate waits for the controller to
// acknowledge the node's new problem before it reports the task anyway.
const healthAckWait = 10 * time.Second

// gateFailure is a failed pre-start check.
type gateFailure struct {
	host  string // the node
	check string
	node  bool // the node's fault: drain it
	msg   string
	gpu   int // the GPU at fault, or -1
}

// Error is the failure as the job's reason shows it, e.g.
// "prestart-workdir on gpu001: working directory "/x" does not exist".
func (f *gateFailure) Error() string {
	if f.node {
		return fmt.Sprintf("%s on %s: %s; node drained", f.check, f.host, f.msg)
	}
	return fmt.Sprintf("%s on %s: %s", f.check, f.host, f.msg)
}

// gate runs the pre-start checks for a prepared task; nil: it may start.
func (a *Agent) gate(ctx context.Context, key taskKey, as assignment, spec runtime.Spec) *gateFailure {
	f := a.gateChecks(ctx, key, as, spec)
	if f != nil {
		f.host = a.cfg.Name
	}
	return f
}

func (a *Agent) gateChecks(ctx context.Context, key taskKey, as assignment, spec runtime.Spec) *gateFailure {
	if f := a.gateGPUs(spec.GPUs); f != nil {
		return f
	}
	if len(as.job.ranks) > 1 {
		if f := a.gateRDMA(spec.GPUs); f != nil {
			return f
		}
	}
	if f := a.runProlog(ctx, key, as, spec); f != nil {
		return f
	}
	if f := checkWorkDir(spec); f != nil {
		return f
	}
	a.emptyOutputs(key, as.job, spec)
	return checkOutputs(spec)
}

// gateGPUs checks the task's GPUs now, as the GPU watcher would.
func (a *Agent) gateGPUs(gpus []int) *gateFailure {
	if len(gpus) == 0 {
		return nil
	}
	if msg, held := a.health.heldOn(gpus); held {
		return &gateFailure{check: gateGPU, node: true, msg: msg, gpu: -1}
	}
	if a.cfg.GPUWatcher == nil {
		return nil
	}
	for _, v := range a.cfg.GPUWatcher.Check() {
		if v.GPU < 0 || slices.Contains(gpus, v.GPU) {
			return &gateFailure{check: gateGPU, node: true, msg: v.Message(), gpu: v.GPU}
		}
	}
	return nil
}

// gateRDMA reads the ports serving the task's GPUs now.
func (a *Agent) gateRDMA(gpus []int) *gateFailure {
	if a.cfg.NICWatcher == nil || len(a.cfg.NICs) == 0 {
		return nil
	}
	ports := a.cfg.NICWatcher.Read(a.health.currentNICs())
	near := slices.DeleteFunc(slices.Clone(ports), func(p rdma.Port) bool {
		return !slices.ContainsFunc(p.GPUs, func(g int) bool { return slices.Contains(gpus, g) })
	})
	if len(near) == 0 {
		near = ports
	}
	var down []string
	for _, p := range near {
		if !p.Up() {
			down = append(down, fmt.Sprintf("%s %s (%s)", p.Name(), p.State, p.PhysState))
		}
	}
	if len(down) == 0 {
		return nil
	}
	return &gateFailure{check: gateRDMA, node: true, gpu: -1,
		msg: fmt.Sprintf("RDMA port %s is not up for a job across nodes", strings.Join(down, ", "))}
}

// runProlog runs the administrator's prolog programs in order.
func (a *Agent) runProlog(ctx context.Context, key taskKey, as assignment, spec runtime.Spec) *gateFailure {
	prolog := as.prolog
	env := prologEnv(as.job, int(key.rank), a.cfg.Name, a.cluster(), spec)
	for _, prog := range prolog.Programs {
		out, err, timedOut := runProgram(ctx, prog, prolog.TimeoutOrDefault(), env)
		if ctx.Err() != nil && !timedOut {
			return nil // the task is being stopped; its stop request says why
		}
		if msg := programVerdict(prog, out, err, timedOut, prolog.TimeoutOrDefault(), false); msg != "" {
			return &gateFailure{check: gateProlog, node: true, gpu: -1, msg: fmt.Sprintf("%s (job %d)", msg, key.job)}
		}
	}
	return nil
}

// prologEnv is what Slurm's slurmd gives a prolog: the job's identity and
// place, and no variable of the job's own.
func prologEnv(job jobInfo, rank int, node, clusterName string, spec runtime.Spec) []string {
	id := strconv.FormatUint(job.id, 10)
	gpus := make([]string, len(spec.GPUs))
	for i, g := range spec.GPUs {
		gpus[i] = strconv.Itoa(g)
	}
	env := []string{
		"PATH=" + defaultPath,
		"SLURM_SCRIPT_CONTEXT=prolog_slurmd",
		"SLURM_JOB_ID=" + id,
		"SLURM_JOBID=" + id,
		"SLURM_JOB_NAME=" + job.name,
		"SLURM_JOB_USER=" + job.user,
		"SLURM_JOB_UID=" + strconv.Itoa(job.uid),
		"SLURM_JOB_GID=" + strconv.Itoa(job.gid),
		"SLURM_JOB_PARTITION=" + job.partition,
		"SLURM_JOB_ACCOUNT=" + job.account,
		"SLURM_JOB_NODELIST=" + hostlist.Compress(job.nodeNames()),
		"SLURM_JOB_WORK_DIR=" + spec.WorkDir,
		"SLURM_JOB_GPUS=" + strings.Join(gpus, ","),
		"CUDA_VISIBLE_DEVICES=" + strings.Join(gpus, ","),
		"SLURMD_NODENAME=" + node,
		"PHX_NODENAME=" + node,
		"PHX_ATTEMPT=" + strconv.Itoa(job.attempt),
		"PHX_RANK=" + strconv.Itoa(rank),
	}
	if clusterName != "" {
		env = append(env, "SLURM_CLUSTER_NAME="+clusterName)
	}
	return env
}

// checkWorkDir checks that the job's user can enter its working directory.
// Resolving DIR/. as the user needs search permission on DIR and on every
// directory above it, as the task's chdir will.
func checkWorkDir(spec runtime.Spec) *gateFailure {
	dir := spec.WorkDir
	err := runtime.AsUser(spec.UID, spec.GID, func() error {
		fd, err := unix.Open(dir+"/.", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	})
	var why string
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		why = "does not exist"
	case errors.Is(err, unix.ENOTDIR):
		why = "is not a directory"
	case errors.Is(err, unix.EACCES):
		why = "cannot be entered by " + userName(spec) + " (permission denied)"
	default:
		why = "cannot be entered: " + err.Error()
	}
	return &gateFailure{check: gateWorkDir, gpu: -1, msg: fmt.Sprintf("working directory %q %s", dir, why)}
}

// checkOutputs opens the task's output files as its user, creating those
// that do not exist yet, as the runtime will.
func checkOutputs(spec runtime.Spec) *gateFailure {
	for i, path := range []string{spec.Stdout, spec.Stderr} {
		if path == "" {
			continue
		}
		what := "output file"
		if i == 1 && path != spec.Stdout {
			what = "error file (-e)"
		}
		f, err := runtime.OpenOutput(path, spec.UID, spec.GID)
		if err == nil {
			f.Close()
			continue
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &gateFailure{check: gateOutput, gpu: -1,
			msg: fmt.Sprintf("%s %q cannot be opened by %s: %v", what, path, userName(spec), err)}
	}
	return nil
}

// userName names the task's user in messages.
func userName(spec runtime.Spec) string {
	if spec.UID < 0 {
		return "the agent's user"
	}
	return "uid " + strconv.Itoa(spec.UID)
}

// holdGateFailure holds a node's failed check as an event, which drains
// it, and returns the health generation that carries it.
func (a *Agent) holdGateFailure(f *gateFailure) uint64 {
	return a.health.hold(heldEvent{check: f.check, message: f.msg, gpu: f.gpu, at: a.cfg.Clock.Now()})
}

// gateFailed ends a task whose gate failed: FAILED when the user is at
// fault; otherwise the node is drained first, then the task reported LOST.
func (a *Agent) gateFailed(t *task, f *gateFailure) {
	log := a.log.With("task", t.key, "check", f.check)
	if !f.node {
		log.Warn("pre-start check failed: the job's fault", "err", f.msg)
		a.end(t, outcome{state: cluster.TaskFailed, msg: f.Error()})
		return
	}
	log.Error("pre-start check failed: draining the node", "err", f.msg)
	if !a.waitHealthAck(a.holdGateFailure(f), healthAckWait) {
		log.Warn("the controller has not acknowledged the drain yet; reporting the task anyway")
	}
	a.end(t, outcome{state: cluster.TaskLost, msg: f.Error()})
}
