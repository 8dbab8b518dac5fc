package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Steps started from outside a job (controller/steps.go): the leader sends
// the command down the ServeLogs stream with a step credential. The agent
// runs it only in a job that has a task running here, only with a
// credential a controller signed for this node, job, user and command
// (with a certificate; agents started with --insecure check none), as the
// job's user, with the task's environment, GPUs and image; the output and
// exit status go back on the stream, as a read's.

// stepLaunch is a step as the agent reads it off the wire (stepFromWire).
type stepLaunch struct {
	id         uint64 // the read's number on the stream
	job        jobInfo
	rank       int // the job's rank on this node
	credential string
	argv       []string
	step       uint32
	stepRank   int // SLURM_PROCID, SLURM_NODEID
	stepNodes  int // SLURM_NTASKS, SLURM_STEP_NUM_NODES
}

func stepFromWire(r *phalanxv1.LogRead) stepLaunch {
	st := r.GetStep()
	return stepLaunch{id: r.GetId(), job: jobFromWire(r.GetJob()), rank: int(r.GetRank()), credential: st.GetCredential(),
		argv: st.GetArgv(), step: st.GetStepId(), stepRank: int(st.GetStepRank()), stepNodes: int(st.GetStepNodes())}
}

// stepKill is how long a step whose caller went away has between SIGTERM
// and SIGKILL.
const stepKill = 5 * time.Second

// runStep answers a LogRead that carries a step.
func (a *Agent) runStep(ctx context.Context, sl stepLaunch, send func(*phalanxv1.ServeLogsRequest) error) {
	id := sl.id
	fail := func(err error) { send(&phalanxv1.ServeLogsRequest{Id: id, Error: err.Error()}) }
	rt, out, err := a.startStep(ctx, sl)
	if err != nil {
		a.log.Warn("step refused", "job", sl.job.id, "err", err)
		fail(err)
		return
	}
	defer os.Remove(out)
	defer rt.Close(context.WithoutCancel(ctx))
	exited := make(chan runtime.ExitStatus, 1)
	go func() {
		st, err := rt.Wait(context.WithoutCancel(ctx))
		if err != nil {
			st = runtime.ExitStatus{Code: 255}
		}
		exited <- st
	}()
	f, err := os.Open(out)
	if err != nil {
		a.signal(rt, syscall.SIGKILL)
		fail(fmt.Errorf("step output on %s: %w", a.cfg.Name, err))
		return
	}
	defer f.Close()
	buf := make([]byte, logChunk)
	// drain sends what the file holds; false when the stream is gone.
	drain := func() bool {
		for {
			n, err := f.Read(buf)
			if n > 0 && send(&phalanxv1.ServeLogsRequest{Id: id, Data: buf[:n]}) != nil {
				return false
			}
			if n == 0 || err != nil {
				return !(err != nil && !errors.Is(err, io.EOF))
			}
		}
	}
	// stop ends the step: SIGTERM, then SIGKILL stepKill later.
	stop := func() runtime.ExitStatus {
		a.signal(rt, syscall.SIGTERM)
		select {
		case st := <-exited:
			return st
		case <-a.cfg.Clock.After(stepKill):
			a.signal(rt, syscall.SIGKILL)
			return <-exited
		}
	}
	end := func(st runtime.ExitStatus) {
		if drain() {
			send(&phalanxv1.ServeLogsRequest{Id: id, Eof: true, Exited: true, ExitCode: int32(st.Code), ExitSignal: int32(st.Signal)})
		}
	}
	job, rank := sl.job.id, sl.rank
	for {
		select {
		case st := <-exited:
			end(st)
			return
		case <-ctx.Done():
			// The caller went away (Ctrl-C, a lost leader): the step
			// ends with it, as srun's does.
			stop()
			return
		case <-a.cfg.Clock.After(logPoll):
			if !drain() {
				stop()
				return
			}
			if !a.runsTask(job, rank) {
				// The job's task here ended: its steps end with it.
				send(&phalanxv1.ServeLogsRequest{Id: id, Data: []byte(fmt.Sprintf("srun: job %d's task on %s ended: stopping the step\n", job, a.cfg.Name))})
				end(stop())
				return
			}
		}
	}
}

// startStep checks a step and starts it; it returns the file its output
// goes to.
func (a *Agent) startStep(ctx context.Context, sl stepLaunch) (runtime.Task, string, error) {
	job, rank := sl.job, sl.rank
	if rank < 0 || rank >= len(job.ranks) || job.ranks[rank].node != a.cfg.Name {
		return nil, "", fmt.Errorf("job %d has no rank %d on node %s", job.id, rank, a.cfg.Name)
	}
	key, ok := a.runningTask(job.id, rank)
	if !ok {
		return nil, "", fmt.Errorf("job %d runs no task on %s: a step runs only beside a running task", job.id, a.cfg.Name)
	}
	if len(sl.argv) == 0 {
		return nil, "", errors.New("step has no command")
	}
	if a.cfg.TLS != nil {
		g := pki.StepGrant{Job: job.id, Step: sl.step, Node: a.cfg.Name, UID: job.uid, GID: job.gid, Argv: sl.argv}
		if _, err := a.cfg.TLS.VerifyStep(sl.credential, g, a.cfg.Clock.Now()); err != nil {
			return nil, "", fmt.Errorf("node %s: %w", a.cfg.Name, err)
		}
	}
	if !a.firstUse(sl.credential) {
		return nil, "", fmt.Errorf("node %s: step credential refused: it was used already", a.cfg.Name)
	}
	container := job.image != ""
	jobDir := a.jobDir(key)
	// Unique on the node even when a new leader numbers steps again.
	name := fmt.Sprintf("%s-s%d-%s", key.id(), sl.step, strconv.FormatInt(a.cfg.Clock.Now().UnixNano(), 36))
	out := filepath.Join(jobDir, "steps", name+".out")
	uid, gid := taskIDs(job)
	env := prependPath(taskEnv(envInput{job: job, rank: rank, container: container, cluster: a.cluster(), nodeCPUs: a.cfg.CPUs, uid: uid, gid: gid}), filepath.Join(jobDir, "bin"))
	n, r := strconv.Itoa(sl.stepNodes), strconv.Itoa(sl.stepRank)
	env = setEnv(env, "PHX_STEP_DIR", filepath.Join(jobDir, "steps"),
		"SLURM_STEP_ID", strconv.Itoa(int(sl.step)), "SLURM_STEPID", strconv.Itoa(int(sl.step)),
		"SLURM_PROCID", r, "SLURM_LOCALID", "0", "SLURM_NTASKS", n, "SLURM_NPROCS", n,
		"SLURM_STEP_NUM_TASKS", n, "SLURM_STEP_NUM_NODES", n)
	spec := runtime.Spec{
		ID: name,
		// The shell finds the command on the job's PATH, as srun does.
		Argv:    append([]string{"/bin/sh", "-c", `exec "$@"`, "srun"}, sl.argv...),
		Env:     env,
		WorkDir: job.workDir,
		Image:   job.image,
		GPUs:    slices.Clone(job.ranks[rank].gpus),
		UID:     idOrKeep(job.uid),
		GID:     idOrKeep(job.gid),
		Stdout:  out,
		Stderr:  out,
	}
	if container {
		spec.Devices = a.cfg.RDMADevices
		spec.Mounts = []runtime.Mount{{Source: job.workDir, Target: job.workDir}}
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	rt, err := a.cfg.Runtime.Start(sctx, spec)
	if err != nil {
		return nil, "", fmt.Errorf("starting the step on %s: %v", a.cfg.Name, oneLine(err.Error()))
	}
	return rt, out, nil
}

// firstUse records a step credential as used, and reports whether it was
// not before: a credential starts one step (one seen on the stream cannot
// be sent again). Credentials are forgotten once they have expired.
func (a *Agent) firstUse(cred string) bool {
	if cred == "" {
		return true // --insecure: none
	}
	now := a.cfg.Clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.usedSteps == nil {
		a.usedSteps = map[string]time.Time{}
	}
	for c, at := range a.usedSteps {
		if now.Sub(at) > 2*pki.StepLifespan {
			delete(a.usedSteps, c)
		}
	}
	if _, used := a.usedSteps[cred]; used {
		return false
	}
	a.usedSteps[cred] = now
	return true
}

// runningTask finds the task of a job's rank running here.
func (a *Agent) runningTask(job uint64, rank int) (taskKey, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.tasks {
		if k.job == job && int(k.rank) == rank {
			return k, true
		}
	}
	return taskKey{}, false
}

// setEnv sets the variables of kv (name, value, name, value...) in env,
// replacing those it holds.
func setEnv(env []string, kv ...string) []string {
	for i := 0; i+1 < len(kv); i += 2 {
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, kv[i]+"=") })
		env = append(env, kv[i]+"="+kv[i+1])
	}
	return env
}
