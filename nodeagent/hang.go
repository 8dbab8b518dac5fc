package nodeagent

import (
	"context"
	"fmt"
	"os"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/checkpoint"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// Hang detection (cluster/hang.go). A task of a job with a hang timeout is
// sampled every hangPoll: its output files (size and modification time),
// the checkpoint steps it committed, and whether any of its GPUs is busy
// (Config.GPUBusy, from NVML's utilisation). Any change, or a busy GPU, is
// progress. After the job's hang timeout with none, the task is a
// suspected hang: the agent logs it, and when the job's restart policy
// names the hang cause, stops it (SIGTERM, the grace, SIGKILL) and reports
// it HUNG, which ends the attempt with cause hang and restarts the job.

// maxHangPoll bounds the time between two samples of a task's progress.
const maxHangPoll = 30 * time.Second

// hangPoll is how often progress is sampled for a hang timeout d.
func hangPoll(d time.Duration) time.Duration { return min(max(d/10, 10*time.Millisecond), maxHangPoll) }

// progressProbe reads what shows a task's progress.
type progressProbe struct {
	outputs []string // the task's output files, host paths
	ckpt    string   // its $PHX_CKPT_DIR; "": none
	gpus    []int
	busy    func(gpus []int) bool // nil: unknown, taken as idle
}

// sample returns a fingerprint of the task's outputs and committed steps,
// which changes when it makes progress, and whether its GPUs are busy.
func (p progressProbe) sample() (fingerprint string, gpuBusy bool) {
	for _, path := range p.outputs {
		if fi, err := os.Stat(path); err == nil {
			fingerprint += fmt.Sprintf("%s:%d:%d;", path, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	if p.ckpt != "" {
		steps, _ := checkpoint.Committed(p.ckpt)
		fingerprint += fmt.Sprint(steps)
	}
	return fingerprint, p.busy != nil && len(p.gpus) > 0 && p.busy(p.gpus)
}

// hangWatch follows one task's progress.
type hangWatch struct {
	timeout   time.Duration
	probe     progressProbe
	last      string    // the last fingerprint
	since     time.Time // when progress was last seen
	suspected bool      // the suspicion was logged
}

func newHangWatch(timeout time.Duration, probe progressProbe, now time.Time) *hangWatch {
	w := &hangWatch{timeout: timeout, probe: probe, since: now}
	w.last, _ = probe.sample()
	return w
}

// check samples the task at now; it reports how long the task has made no
// progress, and whether that is past the timeout.
func (w *hangWatch) check(now time.Time) (idle time.Duration, hung bool) {
	fp, busy := w.probe.sample()
	if fp != w.last || busy {
		w.last, w.since, w.suspected = fp, now, false
	}
	idle = now.Sub(w.since)
	return idle, idle >= w.timeout
}

// hangMessage is the HUNG report's message.
func hangMessage(idle time.Duration) string {
	return fmt.Sprintf("no output, no checkpoint and idle GPUs for %s", idle.Round(time.Second))
}

// restartsOnHang reports whether the job's policy restarts it after a hang.
func (j jobInfo) restartsOnHang() bool { return j.restartOn.Has(cluster.RestartHang) }

// hangStopped is the event of a task stopped for a hang. Whether the job
// restarts is the controllers' to say (its restarts left, the same failure
// in a row): the agent promises nothing.
func hangStopped(rank int32, idle time.Duration) string {
	return fmt.Sprintf("rank %d: %s; stopped (the job restarts if it has restarts left)", rank, hangMessage(idle))
}

// jobEventTimeout bounds the retries of one job event's report.
const jobEventTimeout = time.Minute

// reportJobEvent tells the controllers, in the background, what the
// agent saw about one of its tasks (cluster.AgentJobEvents); it retries
// for a minute, then gives up (the agent's log has it too).
func (a *Agent) reportJobEvent(job uint64, kind cluster.EventKind, msg string) {
	req := &phalanxv1.ReportJobEventRequest{Node: a.cfg.Name, JobId: job, Kind: string(kind), Message: msg}
	go func() {
		err := a.callFor(context.Background(), jobEventTimeout, func(ctx context.Context) error {
			_, err := a.client.ReportJobEvent(ctx, req)
			return err
		})
		if err != nil {
			a.log.Warn("job event not reported", "job", job, "kind", kind, "err", err)
		}
	}()
}
