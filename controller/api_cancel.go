package controller

// Cancels and signals: scancel, by IDs, array tasks or filters, and
// scancel --signal.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
)

func (c *controllerService) CancelJob(ctx context.Context, req *phalanxv1.CancelJobRequest) (*phalanxv1.CancelJobResponse, error) {
	ids, err := c.s.cancel(ctx, req)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &phalanxv1.CancelJobResponse{}
	for _, id := range ids {
		out.Cancelled = append(out.Cancelled, uint64(id))
	}
	return out, nil
}

// cancel cancels the jobs a request names. With a request ID it is
// exactly-once: every batch carries the ID, the store remembers what the
// request cancelled, and a retry answers all of it (the jobs the first
// attempt cancelled have ended, so a retry by user or name finds nothing
// new to cancel, and answers from the store).
func (s *Server) cancel(ctx context.Context, req *phalanxv1.CancelJobRequest) ([]cluster.JobID, error) {
	requestID := []byte(req.RequestId)
	if err := checkRequestID(requestID); err != nil {
		return nil, err
	}
	match, err := cancelFilter(req)
	if err != nil {
		return nil, err
	}
	var ids []cluster.JobID
	named, err := s.arrayTasksNamed(req)
	if err != nil {
		return nil, err
	}
	for _, j := range named {
		if !match(j) { // scancel -t PENDING 42: left alone unless pending
			continue
		}
		if err := s.access.mayChange(ctx, j, "cancel"); err != nil {
			return nil, err
		}
		ids = append(ids, j.ID)
	}
	if len(req.JobIds) == 0 && len(req.ArrayTasks) == 0 {
		if req.User == "" && req.Name == "" && len(req.States) == 0 && len(req.Partitions) == 0 {
			return nil, cluster.Errorf(cluster.ErrInvalid, "name jobs by ID, user, name, state or partition")
		}
		uid, narrow := s.access.ownJobsOnly(ctx)
		if id, _, _ := s.access.caller(ctx); narrow && req.User != "" && req.User != id.User {
			s.access.audit(ctx, "cancel", "permission denied", "user", id.User, "uid", id.UID, "target_user", req.User)
			return nil, cluster.Errorf(cluster.ErrPermission, "permission denied: %s may cancel only their own jobs, not %s's", id, req.User)
		}
		for _, j := range s.store.ActiveJobs() {
			if narrow && j.UID != uid {
				continue
			}
			if match(j) && j.InQueue() {
				ids = append(ids, j.ID)
			}
		}
	}
	if req.Signal != 0 || req.Step != nil {
		return s.signal(ctx, ids, req, requestID)
	}
	if len(ids) == 0 && len(requestID) > 0 {
		cancelled, _ := s.store.RequestCancelled(requestID)
		return cancelled, nil
	}
	// One command per batch: a scancel -u of a whole queue must not make a
	// log entry, and a state transaction, of unbounded size. With a
	// request ID each result holds the earlier batches' jobs too.
	var cancelled []cluster.JobID
	now := s.cfg.Clock.Now()
	for len(ids) > 0 {
		batch := ids[:min(len(ids), maxCancelBatch)]
		ids = ids[len(batch):]
		// Reason None, as Slurm's scontrol shows a cancelled job: one
		// word, so that Reason= splits as the other keys do.
		res, err := s.propose(ctx, fsm.CancelJobs{IDs: batch, Time: now, Reason: string(cluster.ReasonNone), RequestID: requestID})
		if err != nil {
			return cancelled, err
		}
		if len(requestID) > 0 {
			cancelled = res.IDs
		} else {
			cancelled = append(cancelled, res.IDs...)
		}
	}
	s.kickScheduler()
	return cancelled, nil
}

// arrayTasksNamed returns the jobs a cancel names: each job ID (an array's
// ID stands for all its active tasks, as in Slurm) and each array task
// (ID_INDEX). A job ID that does not exist is ErrNotFound. Of a list of
// tasks, those the array does not have (or no longer shows) are skipped,
// as Slurm cancels the valid ones: only when it names none that exist is
// it ErrNotFound. A task that has ended is named, and left as it is.
func (s *Server) arrayTasksNamed(req *phalanxv1.CancelJobRequest) ([]*cluster.Job, error) {
	var out []*cluster.Job
	var byArray map[cluster.JobID][]*cluster.Job // built when an array is named
	tasksOf := func(base cluster.JobID) []*cluster.Job {
		if byArray == nil {
			byArray = map[cluster.JobID][]*cluster.Job{}
			for _, a := range s.store.ActiveJobs() {
				if a.Array != nil {
					byArray[a.Array.JobID] = append(byArray[a.Array.JobID], a)
				}
			}
		}
		return byArray[base]
	}
	for _, id := range req.JobIds {
		j, err := s.visible(cluster.JobID(id), false)
		if err != nil {
			return nil, err
		}
		if j.Array != nil && j.Array.JobID == j.ID {
			if tasks := tasksOf(j.ID); len(tasks) > 0 {
				out = append(out, tasks...)
				continue
			}
		}
		out = append(out, j)
	}
	for _, at := range req.ArrayTasks {
		base := cluster.JobID(at.ArrayJobId)
		tasks := s.tasksByIndex(base, tasksOf(base))
		n := len(out)
		for _, want := range at.TaskIds {
			if j := tasks[int(want)]; j != nil {
				out = append(out, j)
			}
		}
		if len(out) == n {
			return nil, cluster.Errorf(cluster.ErrNotFound, "job %d_%s: invalid job id specified (no such array task, or it ended more than MinJobAge ago)",
				at.ArrayJobId, strings.Join(strings.Fields(fmt.Sprint(at.TaskIds)), ","))
		}
	}
	return out, nil
}

// tasksByIndex returns the tasks of array base the controller shows, in the
// queue or ended (s.visible), by index. An array's tasks have the IDs
// from its own on, one each; how many, its records say (its first task's,
// or one still active when that one is gone).
func (s *Server) tasksByIndex(base cluster.JobID, active []*cluster.Job) map[int]*cluster.Job {
	count := 0
	if j, err := s.store.JobRecord(base); err == nil && j.Array != nil && j.Array.JobID == base {
		count = j.Array.Count
	} else if len(active) > 0 {
		count = active[0].Array.Count
	}
	tasks := make(map[int]*cluster.Job, count)
	for id := base; id < base+cluster.JobID(count); id++ {
		if j, err := s.visible(id, false); err == nil && j.Array != nil && j.Array.JobID == base {
			tasks[j.Array.TaskID] = j
		}
	}
	return tasks
}

// signal records a scancel --signal for the running jobs among ids, in
// batches as cancels are (each batch exactly-once under its own request
// ID, derived from the request's), and returns those that will get it.
func (s *Server) signal(ctx context.Context, ids []cluster.JobID, req *phalanxv1.CancelJobRequest, requestID []byte) ([]cluster.JobID, error) {
	sig, scope, err := signalOf(req)
	if err != nil {
		return nil, err
	}
	var signalled []cluster.JobID
	now := s.cfg.Clock.Now()
	for n := 0; len(ids) > 0; n++ {
		batch := ids[:min(len(ids), maxCancelBatch)]
		ids = ids[len(batch):]
		var rid []byte
		if len(requestID) > 0 {
			rid = fmt.Appendf(nil, "%s/%d", requestID, n)
		}
		res, err := s.propose(ctx, fsm.SignalJobs{IDs: batch, Signal: sig, Scope: scope, Step: req.GetStep(), RequestID: rid, Time: now})
		if err != nil {
			return signalled, err
		}
		signalled = append(signalled, res.IDs...)
	}
	return signalled, nil
}

// signalOf is the signal and scope a scancel --signal asks for; a step's
// (scancel [--signal=SIG] JOBID.STEP) reaches its tasks alone, SIGTERM by
// default: a step's cancel is its SIGTERM, the job runs on.
func signalOf(req *phalanxv1.CancelJobRequest) (int, cluster.SignalScope, error) {
	sig := int(req.Signal)
	if req.Step != nil && sig == 0 {
		sig = int(cluster.SigTerm)
	}
	if sig < 1 || sig > cluster.MaxSignal {
		return 0, 0, cluster.Errorf(cluster.ErrInvalid, "signal %d: give 1 to %d, or a name such as USR1", req.Signal, cluster.MaxSignal)
	}
	switch {
	case req.Step != nil && req.SignalScope != phalanxv1.SignalScope_SIGNAL_SCOPE_UNSPECIFIED:
		return 0, 0, cluster.Errorf(cluster.ErrInvalid, "step %d: a step has no batch script (scancel -b or -f names a job, not JOBID.STEP)", req.GetStep())
	case req.Step != nil && len(req.JobIds)+len(req.ArrayTasks) == 0:
		return 0, 0, cluster.Errorf(cluster.ErrInvalid, "step %d: name its job, scancel JOBID.STEP", req.GetStep())
	case req.Step != nil:
		return sig, cluster.SignalStep, nil
	case req.SignalScope == phalanxv1.SignalScope_SIGNAL_SCOPE_BATCH:
		return sig, cluster.SignalBatch, nil
	case req.SignalScope == phalanxv1.SignalScope_SIGNAL_SCOPE_FULL:
		return sig, cluster.SignalFull, nil
	}
	return sig, cluster.SignalSteps, nil
}

// cancelFilter is what a cancel's user, name, states and partitions
// (scancel -u, -n, -t, -p) ask of a job.
func cancelFilter(req *phalanxv1.CancelJobRequest) (func(*cluster.Job) bool, error) {
	states := make([]cluster.JobState, 0, len(req.States))
	for _, s := range req.States {
		st, err := cluster.ParseJobState(s)
		if err != nil {
			return nil, err
		}
		states = append(states, st)
	}
	return func(j *cluster.Job) bool {
		return (req.User == "" || j.User == req.User) && (req.Name == "" || j.Name == req.Name) &&
			(len(states) == 0 || slices.Contains(states, j.State)) &&
			(len(req.Partitions) == 0 || slices.Contains(req.Partitions, j.Partition))
	}, nil
}

// maxCancelBatch is the most jobs one CancelJobs command names.
const maxCancelBatch = 1000
