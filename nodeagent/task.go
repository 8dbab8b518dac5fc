package nodeagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/internal/durable"
	"github.com/phalanx-hpc/phalanx/runtime"
)

const (
	// startTimeout bounds Runtime.Start, which may pull an image.
	startTimeout = 10 * time.Minute
	// signalTimeout bounds one signal delivery.
	signalTimeout = 10 * time.Second
)

// task is one task the agent started or is starting.
type task struct {
	key    taskKey
	gpus   []int  // host GPU indices; nil: not known (taken over from an earlier run); a.mu guards it
	nodes  int    // the job's node count; 0: not known
	placed uint64 // the index that placed its attempt; 0: not known
	// replaced: stopped for a new placement of its job, attempt and rank;
	// its end is not reported (a.mu guards it).
	replaced bool
	stopCh   chan stopRequest // buffered 1; the first stop request wins
	once     sync.Once
	done     chan struct{} // closed once the task ended and was reported
	// sigCh carries scancel --signal requests to the task's supervisor;
	// signalled is the newest one queued (a.mu guards it).
	sigCh     chan cluster.SignalRequest
	signalled uint32
	// started is when the task's time limit began to count, set before its
	// supervisor runs; limit is the job's limit the supervisor was last
	// handed (a.mu guards it; negative: not enforced, the start unknown),
	// a new one through limitCh (timelimit.go).
	started time.Time
	limit   time.Duration
	limitCh chan time.Duration
}

// stopRequest says why and how to stop a task: the state to report, the
// time between SIGTERM and SIGKILL, and a message.
type stopRequest struct {
	state cluster.TaskState
	grace time.Duration
	msg   string
	// jobSignal, when set, is sent first (a preempted job's --signal): the
	// grace period follows it, then SIGTERM, killGrace and SIGKILL.
	jobSignal cluster.JobSignal
	// killGrace is the job's time between SIGTERM and SIGKILL after
	// jobSignal: the controllers' (supervise sets it).
	killGrace time.Duration
	// detach lets go of a running task instead of stopping it: the agent is
	// going away and its next run takes the task over (adopt.go). A task
	// not yet started is reported in state, as by any other request.
	detach bool
	// shutdown: the agent stops the task because it is shutting down, not
	// for a fault of its node (cluster.TaskReport.AgentShutdown).
	shutdown bool
}

func newTask(key taskKey) *task {
	return &task{key: key, stopCh: make(chan stopRequest, 1), done: make(chan struct{}),
		sigCh: make(chan cluster.SignalRequest, cluster.MaxSignalRequests), limitCh: make(chan time.Duration, 1)}
}

// stop asks the task's goroutine to stop it; later requests are ignored.
func (t *task) stop(r stopRequest) {
	t.once.Do(func() { t.stopCh <- r })
}

// id is the runtime ID of the task: unique on the node, stable for the
// task's life.
func (k taskKey) id() string { return fmt.Sprintf("phx-%d-%d-%d", k.job, k.attempt, k.rank) }

// outcome is how a task ended, as it will be reported.
type outcome struct {
	state    cluster.TaskState
	status   runtime.ExitStatus
	msg      string
	detached bool // not ended: let go of, still running (stopRequest.detach)
	// ckptCorrupt: with TaskFailed, the launch failed on a corrupt copy of
	// the checkpoint step to resume from (errCheckpointCorrupt).
	ckptCorrupt bool
	shutdown    bool // stopped by a stopRequest with shutdown set
	// fenced: with TaskLost, killed when the node's lease ended
	// (runtime.ErrFenced).
	fenced bool
	// unkillable: still there after SIGKILL for the whole timeout
	// (unkillable.go), with the settings that timed it.
	unkillable *cluster.Unkillable
}

// runTask prepares, starts and supervises one task, then reports its end.
func (a *Agent) runTask(t *task, as assignment) {
	defer a.taskWG.Done()
	// Last, once its folder is gone: a task of the same key waiting for
	// this one (a replaced placement) must not find it, or lose it to
	// this one's cleanup.
	defer a.startWaiting()
	defer close(t.done)
	log := a.log.With("task", t.key)
	spec, cleanup, err := a.prepare(t.key, as)
	if err != nil {
		log.Warn("task cannot be launched", "err", err)
		a.end(t, outcome{state: cluster.TaskFailed, msg: err.Error(), ckptCorrupt: errors.Is(err, errCheckpointCorrupt)})
		return
	}
	a.mu.Lock()
	t.gpus, t.nodes = slices.Clone(spec.GPUs), len(as.job.ranks)
	if t.gpus == nil {
		t.gpus = []int{} // known: none
	}
	a.mu.Unlock()
	keep := false // the task outlives this run of the agent: so do its files
	defer func() {
		if !keep {
			cleanup()
		}
	}()
	if f := a.gateUnlessStopped(t, as, spec); f != nil {
		a.gateFailed(t, f)
		return
	}
	select {
	case r := <-t.stopCh:
		a.end(t, outcome{state: r.state, msg: "stopped before it started: " + r.msg, shutdown: r.shutdown})
		return
	default:
	}
	if err := a.writeTaskRecord(t.key, as.job); err != nil {
		log.Warn("task cannot be recorded; a restart of the agent would not know its limits", "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	rt, err := a.cfg.Runtime.Start(ctx, spec)
	cancel()
	if err != nil {
		log.Warn("task failed to start", "err", err)
		a.end(t, outcome{state: cluster.TaskFailed, msg: "start: " + err.Error()})
		return
	}
	log.Info("task running", "id", spec.ID, "gpus", spec.GPUs, "stdout", spec.Stdout)
	a.rep.report(a.taskReport(t.key, cluster.TaskRunning, ""))
	t.started = a.cfg.Clock.Now() // the limit counts from the start the controller is told of
	keep = !a.finish(t, rt, as.job, a.watchCheckpoints(t.key, as.job), a.watchHang(t.key, as.job, spec))
}

// watchHang follows the task's progress when its job has a hang timeout
// (hang.go); nil when it has none.
func (a *Agent) watchHang(key taskKey, job jobInfo, spec runtime.Spec) *hangWatch {
	if job.hangTimeout <= 0 {
		return nil
	}
	probe := progressProbe{outputs: []string{spec.Stdout}, gpus: spec.GPUs, busy: a.cfg.GPUBusy}
	if spec.Stderr != spec.Stdout {
		probe.outputs = append(probe.outputs, spec.Stderr)
	}
	if job.ckpt.dir != "" {
		probe.ckpt = a.ckptDirs(key).local
	}
	return newHangWatch(job.hangTimeout, probe, a.cfg.Clock.Now())
}

// finish supervises a started task to its end, releases it and reports
// the end. It returns false when the agent let go of the task instead,
// leaving it running for its next run.
func (a *Agent) finish(t *task, rt runtime.Task, job jobInfo, stopCkpt func(final bool), hang *hangWatch) bool {
	log := a.log.With("task", t.key)
	out := a.supervise(t, rt, job, hang)
	// The steps committed last are copied before the end is reported;
	// not those of a task lost or fenced: its job may run elsewhere now,
	// writing the same steps.
	stopCkpt(!out.detached && out.state != cluster.TaskLost)
	if out.detached {
		log.Info("leaving the task running for the next run of the agent", "id", rt.ID())
		return false
	}
	if out.unkillable != nil {
		a.killFailed(t, *out.unkillable)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), signalTimeout)
	if err := rt.Close(closeCtx); err != nil {
		log.Warn("releasing task", "err", err)
	}
	cancel()
	log.Info("task ended", "state", out.state, "code", out.status.Code, "signal", int(out.status.Signal), "msg", out.msg)
	a.end(t, out)
	return true
}

// supervise waits for the task to exit, stopping it when asked to or when
// its time limit (if any, counted from t.started, following changes to it)
// passes, and sending the job's --signal its lead before that limit. With
// hang set, it samples the task's progress and deals with a suspected hang
// (hang.go).
func (a *Agent) supervise(t *task, rt runtime.Task, job jobInfo, hang *hangWatch) outcome {
	waitCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan outcome, 1)
	go func() {
		st, err := rt.Wait(waitCtx)
		switch {
		case errors.Is(err, runtime.ErrLost), errors.Is(err, runtime.ErrFenced):
			exited <- outcome{state: cluster.TaskLost, msg: err.Error(), fenced: errors.Is(err, runtime.ErrFenced)}
			return
		case err != nil:
			exited <- outcome{state: cluster.TaskFailed, msg: "lost track of the task: " + err.Error()}
			return
		}
		exited <- outcome{state: cluster.TaskExited, status: st, msg: exitMessage(st)}
	}()
	limit := newLimitWatch(a.cfg.Clock, t.started, job.timeLimit, job.signal)
	var sample <-chan time.Time
	if hang != nil {
		sample = a.cfg.Clock.After(hangPoll(hang.timeout))
	}
	for {
		select {
		case out := <-exited:
			return out
		case r := <-t.sigCh:
			a.deliverSignal(t, rt, r)
		case <-sample:
			sample = a.cfg.Clock.After(hangPoll(hang.timeout))
			idle, hung := hang.check(a.cfg.Clock.Now())
			switch {
			case hung && job.restartsOnHang():
				a.log.Warn("suspected hang: stopping the task", "task", t.key, "idle", idle.Round(time.Second))
				a.reportJobEvent(t.key.job, cluster.EventHang, hangStopped(t.key.rank, idle))
				return a.terminate(rt, exited, stopRequest{state: cluster.TaskHung, grace: a.killGrace(job), msg: hangMessage(idle)})
			case hung && !hang.suspected:
				hang.suspected = true
				a.log.Warn("suspected hang (the job's --restart-on does not name hang: it runs on)", "task", t.key, "idle", idle.Round(time.Second))
				a.reportJobEvent(t.key.job, cluster.EventHang, fmt.Sprintf("rank %d: %s; it runs on (--restart-on does not name hang)", t.key.rank, hangMessage(idle)))
			}
		case l := <-t.limitCh:
			a.changeLimit(t, limit, l)
		case <-limit.warn:
			limit.warned()
			a.signalJob(rt, job.signal, "its time limit is near")
		case <-limit.deadline:
			return a.terminate(rt, exited, stopRequest{state: cluster.TaskTimeout, grace: a.killGrace(job),
				msg: fmt.Sprintf("time limit of %s reached", limit.limit)})
		case r := <-t.stopCh:
			if r.detach {
				return outcome{detached: true}
			}
			r.killGrace = a.killGrace(job)
			return a.terminate(rt, exited, r)
		}
	}
}

// killGrace is the time between SIGTERM and SIGKILL when the agent stops
// one of job's tasks by itself (its time limit, a hang): the controllers'
// --kill-grace its assignment carried, which a cancel gets too and the
// scheduler counts on; else the agent's own.
func (a *Agent) killGrace(job jobInfo) time.Duration {
	if job.killGrace > 0 {
		return job.killGrace
	}
	return a.cfg.KillGrace
}

// signalJob sends the job's own --signal, saying why in the log.
func (a *Agent) signalJob(rt runtime.Task, s cluster.JobSignal, why string) {
	a.log.Info("sending the job its signal", "id", rt.ID(), "signal", syscall.Signal(s.Signal), "batch_only", s.Batch, "why", why)
	ctx, cancel := context.WithTimeout(context.Background(), signalTimeout)
	defer cancel()
	if err := rt.SignalJob(ctx, syscall.Signal(s.Signal), s.Batch); err != nil {
		a.log.Warn("signal job", "id", rt.ID(), "signal", s.Signal, "err", err)
	}
}

// terminate sends SIGTERM, waits the grace period, sends SIGKILL, and
// waits for the task to exit, reporting it in r's state.
func (a *Agent) terminate(rt runtime.Task, exited <-chan outcome, r stopRequest) outcome {
	stopped := func(out outcome) outcome {
		if out.state == cluster.TaskExited {
			out.state, out.msg, out.shutdown = r.state, r.msg, r.shutdown
		}
		return out
	}
	grace := r.grace
	if r.jobSignal.Signal != 0 {
		a.signalJob(rt, r.jobSignal, r.msg)
		select {
		case out := <-exited:
			return stopped(out)
		case <-a.cfg.Clock.After(r.grace):
		}
		grace = cmp.Or(r.killGrace, a.cfg.KillGrace)
	}
	a.signal(rt, syscall.SIGTERM)
	select {
	case out := <-exited:
		return stopped(out)
	case <-a.cfg.Clock.After(grace):
	}
	a.signal(rt, syscall.SIGKILL)
	u := a.unkillableSettings()
	select {
	case out := <-exited:
		return stopped(out)
	case <-a.cfg.Clock.After(u.WaitAfterKill()):
		return outcome{state: r.state, msg: fmt.Sprintf("%s; still running %ds after SIGKILL: Kill task failed, node drained", r.msg, int(u.WaitAfterKill()/time.Second)),
			shutdown: r.shutdown, unkillable: &u}
	}
}

func (a *Agent) signal(rt runtime.Task, sig syscall.Signal) {
	ctx, cancel := context.WithTimeout(context.Background(), signalTimeout)
	defer cancel()
	if err := rt.Signal(ctx, sig); err != nil {
		a.log.Warn("signal task", "id", rt.ID(), "signal", sig, "err", err)
	}
}

// gateUnlessStopped runs the pre-start gate; a stop request cuts it short
// (a prolog is killed) and stays pending for runTask, and a failure then
// is not the gate's.
func (a *Agent) gateUnlessStopped(t *task, as assignment, spec runtime.Spec) *gateFailure {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case r := <-t.stopCh:
			t.stopCh <- r // still pending: runTask reads it next
			cancel()
		case <-ctx.Done():
		}
	}()
	f := a.gate(ctx, t.key, as, spec)
	interrupted := ctx.Err() != nil
	cancel()
	<-stopped
	if interrupted {
		if f != nil && f.node { // the node is at fault whatever became of the job
			a.holdGateFailure(f)
		}
		return nil
	}
	return f
}

// end forgets the running task, remembers that it ended, and queues its
// final report, all at once so no reconcile sees it half-ended.
func (a *Agent) end(t *task, out outcome) {
	req := a.taskReport(t.key, out.state, oneLine(out.msg))
	req.ExitCode, req.ExitSignal = int32(out.status.Code), int32(out.status.Signal)
	req.CheckpointCorrupt = out.ckptCorrupt
	req.AgentShutdown = out.shutdown && out.state == cluster.TaskLost
	req.Fenced = out.fenced && out.state == cluster.TaskLost
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.tasks, t.key)
	if t.replaced {
		a.log.Info("task of a replaced placement ended; not reported", "task", t.key, "state", out.state)
	} else {
		a.remember(t.key, t.placed, req, true)
	}
}

// startWaiting reconciles the last set again when tasks wait for others
// to end (reconcile.go): one has.
func (a *Agent) startWaiting() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.waiting) > 0 && a.last != nil {
		a.reconcileLocked(a.last)
	}
}

// exitMessage describes an exit that was not a success.
func exitMessage(st runtime.ExitStatus) string {
	switch {
	case st.Signal != 0:
		return fmt.Sprintf("killed by signal %d (%s)", int(st.Signal), st.Signal)
	case st.Code != 0:
		return fmt.Sprintf("exit code %d", st.Code)
	}
	return ""
}

func secondsDuration(s int64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// oneLine folds a message onto one line of valid UTF-8, for reports,
// tables and drain reasons.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "?")), " ")
}

// queueSignals hands the task's supervisor the scancel --signal requests
// newer than the last one it was given, oldest first; a.mu is held.
func (a *Agent) queueSignals(t *task, rs []cluster.SignalRequest) {
	for _, r := range rs {
		if r.Seq <= t.signalled {
			continue
		}
		select {
		case t.sigCh <- r:
			t.signalled = r.Seq
		default:
			return // the supervisor is behind: the rest come with a later assignment
		}
	}
}

// deliverSignal sends a scancel --signal request to the task's processes
// its scope names, and records it delivered, for a later run of the agent.
func (a *Agent) deliverSignal(t *task, rt runtime.Task, r cluster.SignalRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), signalTimeout)
	defer cancel()
	sig := syscall.Signal(r.Signal)
	var err error
	switch r.Scope {
	case cluster.SignalFull:
		err = rt.Signal(ctx, sig)
	case cluster.SignalStep:
		if err := a.markStepSignal(t.key, r); err != nil {
			a.log.Warn("marking a step's signal: an srun of the step that has not started its tasks here yet will start them", "task", t.key, "step", r.Step, "err", err)
		}
		err = rt.SignalStep(ctx, sig, r.Step)
	default:
		err = rt.SignalJob(ctx, sig, r.Scope == cluster.SignalBatch)
	}
	if err != nil {
		a.log.Warn("scancel --signal not delivered", "task", t.key, "signal", sig, "err", err)
	} else {
		a.log.Info("scancel --signal delivered", "task", t.key, "signal", sig, "scope", r.Scope)
	}
	if err := a.writeSignalled(t.key, r.Seq); err != nil {
		a.log.Warn("recording a delivered signal; a restart of the agent would send it again", "task", t.key, "err", err)
	}
}

// The newest scancel --signal request delivered to a task is kept in
// signalled.<rank> in its attempt folder, so that an agent that takes the
// task over does not send it again.
func (a *Agent) signalledPath(key taskKey) string {
	return filepath.Join(a.jobDir(key), fmt.Sprintf("signalled.%d", key.rank))
}

func (a *Agent) writeSignalled(key taskKey, seq uint32) error {
	return durable.WriteFile(a.signalledPath(key), []byte(strconv.FormatUint(uint64(seq), 10)), 0o600)
}

// readSignalled is the newest request delivered to the task; 0: none.
func (a *Agent) readSignalled(key taskKey) uint32 {
	b, err := os.ReadFile(a.signalledPath(key))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	return uint32(n)
}
