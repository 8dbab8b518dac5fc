package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/internal/durable"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Tasks outlive the agent. A runtime that keeps its tasks under
// supervisors of their own (runtime.Recoverer: the process runtime) lets
// a new run of the agent find them again. Before it talks to any
// controller, Run asks the runtime for the tasks an earlier run started
// and did not release, and supervises each as if it had started it: a
// task still running is watched, its time limit enforced from the time it
// started; one that ended meanwhile is reported with its exit status; one
// whose fate is unknown (its supervisor died too) has been killed by the
// runtime and is reported LOST. The controller, which kept the job
// RUNNING while the node's heartbeats paused, sees nothing else.
//
// For that the agent keeps, beside the job's script, the task's own
// record, task.<rank> in the attempt folder, written just before the
// task starts: when it started and its limits. A change to the job's time
// limit while the task runs is written there too (timelimit.go).
//
// When Run's context ends, the agent leaves such tasks running for its
// next run (Config.StopTasksOnExit stops them instead); a task it was
// still preparing is reported LOST.

// taskRecordVersion is the version of the task.<rank> format.
const taskRecordVersion = 1

// taskRecord is the agent's record of a started task: what it needs to go
// on supervising it after a restart.
type taskRecord struct {
	V                  int       `json:"v"`
	Started            time.Time `json:"started"`
	TimeLimitSeconds   int64     `json:"time_limit_s"`
	Signal             int       `json:"signal,omitempty"`
	SignalBeforeSecond int64     `json:"signal_before_s,omitempty"`
	SignalBatch        bool      `json:"signal_batch,omitempty"`
	KillGraceSeconds   int64     `json:"kill_grace_s,omitempty"` // 0: the agent's --kill-grace
	// The job's checkpoint store, how many steps it keeps, its ranks and
	// its user: a re-adopted task's committed steps are still copied.
	CkptDir  string `json:"ckpt_dir,omitempty"`
	CkptKeep int    `json:"ckpt_keep,omitempty"`
	Ranks    int    `json:"ranks,omitempty"`
	UID      int    `json:"uid,omitempty"`
	GID      int    `json:"gid,omitempty"`
}

func (a *Agent) taskRecordPath(key taskKey) string {
	return filepath.Join(a.jobDir(key), fmt.Sprintf("task.%d", key.rank))
}

// writeTaskRecord records the task's start and limits, as the task is
// about to start.
func (a *Agent) writeTaskRecord(key taskKey, job jobInfo) error {
	rec := taskRecord{V: taskRecordVersion, Started: a.cfg.Clock.Now(), TimeLimitSeconds: int64(job.timeLimit / time.Second),
		Signal: job.signal.Signal, SignalBeforeSecond: int64(job.signal.Before / time.Second), SignalBatch: job.signal.Batch,
		KillGraceSeconds: int64(job.killGrace / time.Second),
		CkptDir:          job.ckpt.dir, CkptKeep: job.ckpt.keep, Ranks: len(job.ranks), UID: job.uid, GID: job.gid}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return durable.WriteFile(a.taskRecordPath(key), b, 0o600)
}

// recordedLimits reads a task's record: its limits, and when it started,
// which its time limit counts from. ok is false when there is no usable
// record.
func (a *Agent) recordedLimits(key taskKey) (job jobInfo, started time.Time, ok bool) {
	b, err := os.ReadFile(a.taskRecordPath(key))
	if err != nil {
		return job, started, false
	}
	var rec taskRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.V != taskRecordVersion {
		return job, started, false
	}
	job.signal = cluster.JobSignal{Signal: rec.Signal, Before: time.Duration(rec.SignalBeforeSecond) * time.Second, Batch: rec.SignalBatch}
	job.ckpt = ckptInfo{dir: rec.CkptDir, keep: rec.CkptKeep}
	job.ranks = make([]rankSlot, rec.Ranks)
	job.uid, job.gid = rec.UID, rec.GID
	job.timeLimit = secondsDuration(rec.TimeLimitSeconds)
	job.killGrace = secondsDuration(rec.KillGraceSeconds)
	return job, rec.Started, true
}

// parseTaskID reads a runtime ID, phx-<job>-<attempt>-<rank>.
func parseTaskID(id string) (taskKey, bool) {
	f := strings.Split(id, "-")
	if len(f) != 4 || f[0] != "phx" {
		return taskKey{}, false
	}
	job, err1 := strconv.ParseUint(f[1], 10, 64)
	attempt, err2 := strconv.ParseInt(f[2], 10, 32)
	rank, err3 := strconv.ParseInt(f[3], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || attempt < 0 || rank < 0 {
		return taskKey{}, false
	}
	return taskKey{job: job, attempt: int32(attempt), rank: int32(rank)}, true
}

// adopt supervises the tasks an earlier run of the agent left to the
// runtime, and returns their attempts, whose folders are theirs still. It
// runs to its end even if the agent is told to stop meanwhile: a task not
// adopted would lose its folder, and with it its limits.
func (a *Agent) adopt() map[attemptKey]bool {
	rec, ok := a.cfg.Runtime.(runtime.Recoverer)
	if !ok {
		return nil
	}
	tasks, err := rec.Recover(context.Background())
	if err != nil {
		a.log.Error("finding the tasks an earlier run of the agent started; those not found cannot be re-adopted", "err", err)
	}
	adopted := make(map[attemptKey]bool)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, rt := range tasks {
		key, ok := parseTaskID(rt.ID())
		if !ok {
			a.log.Warn("a task of unknown ID left by an earlier run; killing it", "id", rt.ID())
			go a.discard(rt)
			continue
		}
		job, started, ok := a.recordedLimits(key)
		adopted[attemptKey{job: key.job, attempt: key.attempt}] = true
		t := newTask(key)
		t.started, t.limit = started, job.timeLimit
		if !ok {
			a.log.Error("no usable record of a re-adopted task's limits; its time limit is not enforced here", "task", key)
			t.limit = -1
		}
		t.signalled = a.readSignalled(key)
		a.tasks[key] = t
		a.taskWG.Add(1)
		go a.superviseAdopted(t, rt, job)
	}
	return adopted
}

// superviseAdopted takes over a task an earlier run of the agent started.
func (a *Agent) superviseAdopted(t *task, rt runtime.Task, job jobInfo) {
	defer a.taskWG.Done()
	defer close(t.done)
	a.log.Info("re-adopted a task an earlier run of the agent started", "task", t.key, "started", t.started,
		"time_limit", cluster.FormatLimit(job.timeLimit))
	if a.finish(t, rt, job, a.watchCheckpoints(t.key, job), nil) {
		a.removeJobDir(t.key)
		os.RemoveAll(a.ckptDirs(t.key).base)
	}
}

// discard kills a task no one can account for and releases it.
func (a *Agent) discard(rt runtime.Task) {
	ctx, cancel := context.WithTimeout(context.Background(), a.unkillableSettings().WaitAfterKill())
	defer cancel()
	rt.Signal(ctx, syscall.SIGKILL)
	rt.Wait(ctx)
	rt.Close(ctx)
}

func (a *Agent) removeJobDir(key taskKey) {
	if err := os.RemoveAll(a.jobDir(key)); err != nil {
		a.log.Warn("removing job directory", "dir", a.jobDir(key), "err", err)
	}
}
