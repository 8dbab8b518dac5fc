package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/checkpoint"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Checkpoint staging (package checkpoint) for a job with a store
// (sbatch --checkpoint-dir):
//
//   - before the task starts, the agent makes its node-local directory,
//     <CheckpointRoot>/<job>.<attempt>.<rank>/ckpt ($PHX_CKPT_DIR), owned
//     by the job's user, and, when the job has a complete step, stages this
//     rank's files of the newest complete one in from the store into
//     .../resume ($PHX_RESUME_FROM, $PHX_RESUME_STEP), checksums verified;
//   - while the task runs (and once more after it ended), it finds the
//     steps the task committed (phx ckpt commit N) and copies each to the
//     store in the background, throttled, then reports it to the
//     controller, which records the step complete once every rank has;
//     after each copy the agent prunes the store to the job's last K
//     complete steps.
//
// Every access to the store and to the node-local directories is made
// with the job's user's file-system identity (runtime.AsUser): the store
// is a path the user chose.

// Checkpoint defaults.
const (
	// DefaultCheckpointPoll is how often a running task's committed steps
	// are looked for.
	DefaultCheckpointPoll = time.Second
	// ckptFinalTimeout bounds the copy of the steps a task committed just
	// before it ended; the end is reported after it.
	ckptFinalTimeout = 10 * time.Minute
	// ckptReportTimeout bounds the retries of one step's report.
	ckptReportTimeout = time.Minute
)

// ckptDirs are a task's node-local checkpoint directories.
type ckptDirs struct {
	base, local, resume string
}

func (a *Agent) ckptDirs(key taskKey) ckptDirs {
	base := filepath.Join(a.cfg.CheckpointRoot, fmt.Sprintf("%d.%d.%d", key.job, key.attempt, key.rank))
	return ckptDirs{base: base, local: filepath.Join(base, "ckpt"), resume: filepath.Join(base, "resume")}
}

// prepareCheckpoint makes the task's checkpoint directories and stages its
// files of the job's newest complete step in. It returns the environment
// the task gets. Its errors are the user's (a store it cannot read, a
// corrupt step), one line each.
func (a *Agent) prepareCheckpoint(key taskKey, job jobInfo) (env map[string]string, err error) {
	d := a.ckptDirs(key)
	if err := checkCkptRoot(a.cfg.CheckpointRoot); err != nil {
		return nil, err
	}
	// The task's own directory, made afresh by root in a root it alone
	// can write: nothing in it can be a user's link.
	if err := os.RemoveAll(d.base); err != nil {
		return nil, fmt.Errorf("checkpoint directory: %w", err)
	}
	if err := os.Mkdir(d.base, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint directory: %w", err)
	}
	if uid := idOrKeep(job.uid); uid >= 0 && os.Geteuid() == 0 {
		if err := os.Lchown(d.base, uid, max(idOrKeep(job.gid), 0)); err != nil {
			return nil, fmt.Errorf("checkpoint directory: %w", err)
		}
	}
	env = map[string]string{"PHX_CKPT_DIR": d.local, "PHX_CKPT_STORE": job.ckpt.dir}
	err = runtime.AsUser(idOrKeep(job.uid), idOrKeep(job.gid), func() error {
		if fi, err := os.Stat(job.ckpt.dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("checkpoint store %s is not a directory this node can reach: create it on shared storage, or mount it here", job.ckpt.dir)
		}
		if err := probeWritable(job.ckpt.dir); err != nil {
			return fmt.Errorf("checkpoint store %s: the job's user cannot write it (%v): its steps are copied there as that user", job.ckpt.dir, err)
		}
		if err := os.MkdirAll(d.local, 0o700); err != nil {
			return fmt.Errorf("checkpoint directory: %w", err)
		}
		if !job.ckpt.complete {
			return nil
		}
		step, ok, skipped, err := checkpoint.Latest(job.ckpt.dir, len(job.ranks), job.ckpt.step)
		for _, s := range skipped {
			a.log.Warn("checkpoint step skipped", "job", key.job, "step", s.Step, "why", s.Why)
			a.reportJobEvent(key.job, cluster.EventCheckpointSkipped, fmt.Sprintf("rank %d: step %d skipped: %s", key.rank, s.Step, s.Why))
		}
		if err != nil {
			return fmt.Errorf("checkpoint store %s: %w", job.ckpt.dir, err)
		}
		if !ok {
			a.log.Warn("no complete checkpoint step in the store: the task starts afresh", "job", key.job, "store", job.ckpt.dir, "recorded", job.ckpt.step)
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), ckptFinalTimeout)
		defer cancel()
		if _, err := checkpoint.Stage(ctx, job.ckpt.dir, step, int(key.rank), d.resume); err != nil {
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				return err
			}
			return a.corruptStep(key, job, step, err)
		}
		env["PHX_RESUME_FROM"], env["PHX_RESUME_STEP"] = d.resume, strconv.FormatInt(step, 10)
		a.log.Info("checkpoint staged in", "job", key.job, "rank", key.rank, "step", step)
		return nil
	})
	if err != nil {
		os.RemoveAll(d.base)
		return nil, err
	}
	return env, nil
}

// probeWritable makes a directory in dir and removes it, with the
// caller's file-system identity: a store the job's user cannot write
// fails the launch, rather than every copy while the job runs. The name
// starts .phx-, as names no step holds.
func probeWritable(dir string) error {
	p, err := os.MkdirTemp(dir, ".phx-probe-")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	return os.Remove(p)
}

// errCheckpointCorrupt is what a launch failure wraps when the rank's copy
// of the step to resume from is corrupt and marked so: the controller then
// restarts the job (cluster.RestartCheckpoint), and every rank of the next
// attempt passes over the step.
var errCheckpointCorrupt = errors.New("restarting from an earlier step")

// corruptStep marks the rank's copy of step corrupt in the job's store, as
// the job's user (the caller runs as it), reports the skip as an event of
// the job, and returns the launch's error. A mark that cannot be written
// fails the launch like any other error: without it the next attempt
// would find the same step.
func (a *Agent) corruptStep(key taskKey, job jobInfo, step int64, staged error) error {
	if err := checkpoint.MarkCorrupt(job.ckpt.dir, step, int(key.rank), staged.Error()); err != nil {
		return fmt.Errorf("%w; and marking it corrupt in the store failed: %v", staged, err)
	}
	a.log.Warn("checkpoint step corrupt; marked, the job restarts from an earlier step", "job", key.job, "step", step, "err", staged)
	a.reportJobEvent(key.job, cluster.EventCheckpointSkipped, fmt.Sprintf("rank %d: step %d skipped: %v", key.rank, step, staged))
	return fmt.Errorf("%w: %w", staged, errCheckpointCorrupt)
}

// checkCkptRoot makes the root of the tasks' checkpoint directories
// (mode 0755, so that every job's user can reach its own directory in it)
// and refuses one that others may write to: a user could plant links
// where the agent, as root, makes and hands over directories.
func checkCkptRoot(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("checkpoint root %s: %w", root, err)
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return fmt.Errorf("checkpoint root %s: %w", root, err)
	}
	switch {
	case !fi.IsDir():
		return fmt.Errorf("checkpoint root %s is not a directory (phalanx-agent --checkpoint-local)", root)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("checkpoint root %s is writable by others (mode %v): give phalanx-agent --checkpoint-local a directory only root may write", root, fi.Mode().Perm())
	case fi.Mode().Perm()&0o005 != 0o005:
		return os.Chmod(root, 0o755) // made 0700 by an umask, or by hand
	}
	return nil
}

// ckptWatcher copies the steps one task commits to its job's store.
type ckptWatcher struct {
	a        *Agent
	key      taskKey
	job      jobInfo
	dirs     ckptDirs
	uploaded int64 // the newest step copied; -1: none
}

func (a *Agent) newCkptWatcher(key taskKey, job jobInfo) *ckptWatcher {
	return &ckptWatcher{a: a, key: key, job: job, dirs: a.ckptDirs(key), uploaded: -1}
}

// run copies committed steps every poll until ctx ends.
func (w *ckptWatcher) run(ctx context.Context) {
	for {
		w.scan(ctx)
		select {
		case <-ctx.Done():
			return
		case <-w.a.cfg.Clock.After(w.a.cfg.CheckpointPoll):
		}
	}
}

// scan copies, oldest first, every committed step newer than the last one
// copied, and reports each.
func (w *ckptWatcher) scan(ctx context.Context) {
	job, rank := w.job, int(w.key.rank)
	var steps []int64
	err := runtime.AsUser(idOrKeep(job.uid), idOrKeep(job.gid), func() error {
		var err error
		steps, err = checkpoint.Committed(w.dirs.local)
		return err
	})
	if err != nil {
		w.a.log.Warn("reading committed checkpoint steps", "task", w.key, "err", err)
		return
	}
	for _, step := range steps {
		if step <= w.uploaded || ctx.Err() != nil {
			continue
		}
		start := time.Now()
		var m checkpoint.Manifest
		copied := false
		err := runtime.AsUser(idOrKeep(job.uid), idOrKeep(job.gid), func() error {
			// A task taken over after an agent restart: its steps copied
			// before are not copied again (but reported again: the report
			// may be what the restart cut off).
			if checkpoint.Uploaded(job.ckpt.dir, step, rank, int(w.key.attempt)) {
				return nil
			}
			var err error
			m, err = checkpoint.Upload(ctx, w.dirs.local, job.ckpt.dir, step, rank,
				checkpoint.WithRate(w.a.cfg.CheckpointRate), checkpoint.WithAttempt(int(w.key.attempt)))
			copied = err == nil
			return err
		})
		if err != nil {
			w.a.log.Warn("copying a checkpoint step to the store", "task", w.key, "step", step, "err", err)
			return // tried again at the next scan
		}
		w.uploaded = step
		if copied {
			w.a.log.Info("checkpoint step copied", "task", w.key, "step", step, "files", len(m.Files), "took", time.Since(start).Round(time.Millisecond))
		} else {
			w.a.log.Info("checkpoint step already in the store", "task", w.key, "step", step)
		}
		w.report(ctx, step)
		// Every rank prunes: the last to copy a step is the one that sees
		// it complete. Pruning is idempotent.
		w.prune()
	}
}

// report tells the controller, retrying until it answers, ctx ends or
// ckptReportTimeout passes: a step some rank never reported is not
// complete, and the next one is.
func (w *ckptWatcher) report(ctx context.Context, step int64) {
	req := &phalanxv1.ReportCheckpointRequest{Node: w.a.cfg.Name, JobId: w.key.job, Attempt: w.key.attempt, Rank: w.key.rank, Step: step}
	err := w.a.callFor(ctx, ckptReportTimeout, func(ctx context.Context) error {
		_, err := w.a.client.ReportCheckpoint(ctx, req)
		return err
	})
	if err != nil {
		w.a.log.Warn("a checkpoint step not reported: it stays incomplete", "task", w.key, "step", step, "err", err)
	}
}

// callFor makes call, each try bounded by rpcTimeout, retrying with
// backoff until it succeeds, ctx ends or d has passed; it returns the last
// error.
func (a *Agent) callFor(ctx context.Context, d time.Duration, call func(context.Context) error) error {
	ctx, stop := context.WithTimeout(ctx, d)
	defer stop()
	b := newBackoff()
	for {
		callCtx, cancel := context.WithTimeout(ctx, rpcTimeout)
		err := call(callCtx)
		cancel()
		if err == nil {
			return nil
		}
		if sleep(ctx, a.cfg.Clock, b.next()) != nil {
			return err
		}
	}
}

// prune keeps the job's last complete steps in the store.
func (w *ckptWatcher) prune() {
	job := w.job
	err := runtime.AsUser(idOrKeep(job.uid), idOrKeep(job.gid), func() error {
		removed, err := checkpoint.Prune(job.ckpt.dir, len(job.ranks), job.ckpt.keep)
		if len(removed) > 0 {
			w.a.log.Info("old checkpoint steps removed", "job", w.key.job, "steps", removed)
		}
		return err
	})
	if err != nil {
		w.a.log.Warn("pruning the checkpoint store", "job", w.key.job, "err", err)
	}
}

// watchCheckpoints starts the task's watcher; the function it returns
// stops it and, when the task has ended (final), copies what it committed
// last before returning.
func (a *Agent) watchCheckpoints(key taskKey, job jobInfo) (stop func(final bool)) {
	if job.ckpt.dir == "" {
		return func(bool) {}
	}
	w := a.newCkptWatcher(key, job)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()
	return func(final bool) {
		cancel()
		<-done
		if !final {
			return
		}
		fctx, cancel := context.WithTimeout(context.Background(), ckptFinalTimeout)
		defer cancel()
		w.scan(fctx)
	}
}
