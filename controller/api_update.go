package controller

import (
	"context"
	"errors"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// Changes to nodes and jobs after the fact, as Slurm's `scontrol update`.

// maxReasonLen bounds the reason an update stores (cluster.MaxJobName
// its job name).
const maxReasonLen = 1024

func (c *controllerService) UpdateJob(ctx context.Context, req *phalanxv1.UpdateJobRequest) (*phalanxv1.UpdateJobResponse, error) {
	if err := c.s.updateJob(ctx, req); err != nil {
		return nil, toStatus(err)
	}
	return &phalanxv1.UpdateJobResponse{}, nil
}

// updateJob renames a job, changes the time limit of a pending or running
// one, or changes what a pending job asks for. Its owner may rename it,
// shorten its limit, hold and release it, and change its partition, node
// count, dependency, QoS and (up only) nice value, as Slurm lets users;
// operators and administrators may change any job, lengthen a limit or
// lift it, and set its priority. The new request is checked as a submit
// is (checkConstraints, admit).
func (s *Server) updateJob(ctx context.Context, req *phalanxv1.UpdateJobRequest) error {
	j, err := s.visible(cluster.JobID(req.JobId), false)
	if err != nil {
		return err
	}
	if err := s.access.mayChange(ctx, j, "update"); err != nil {
		return err
	}
	// A retry of an update that was applied (its answer lost) is answered
	// as the first was, before the job, changed by it, is checked again.
	requestID := []byte(req.RequestId)
	if err := checkRequestID(requestID); err != nil {
		return err
	}
	if len(requestID) > 0 && s.store.RequestUpdated(j.ID, requestID) {
		return nil
	}
	if !j.InQueue() {
		return cluster.Errorf(cluster.ErrInvalid, "Job has already finished: job %d ended %s, there is nothing to update", j.ID, j.State)
	}
	req = priorityHold(j, req)
	up := fsm.UpdateJob{ID: j.ID, JobUpdate: store.JobUpdate{Name: req.Name}, RequestID: requestID, Time: s.cfg.Clock.Now()}
	if req.Name != nil {
		if *req.Name == "" {
			return cluster.Errorf(cluster.ErrInvalid, "job name \"\": give one line of 1 to %d bytes", cluster.MaxJobName)
		}
		if err := cluster.CheckJobName(*req.Name); err != nil {
			return err
		}
	}
	secs, err := requestedLimit(j, req)
	if err != nil {
		return err
	}
	if secs != nil {
		part := j.Partition // the partition the job will be in: checked together
		if req.Partition != nil {
			part = *req.Partition
		}
		limit, err := s.newTimeLimit(ctx, j, *secs, part)
		if err != nil {
			return err
		}
		up.TimeLimit = &limit
	}
	if req.Hold != phalanxv1.HoldRequest_HOLD_REQUEST_UNSPECIFIED {
		h, err := s.newHold(ctx, j, req.Hold)
		if err != nil {
			return err
		}
		up.Hold = &h
	}
	if err := s.updateRequest(ctx, j, req, &up.JobUpdate); err != nil {
		return err
	}
	if req.ArrayTaskThrottle != nil {
		if err := checkThrottle(j, *req.ArrayTaskThrottle); err != nil {
			return err
		}
		n := int(*req.ArrayTaskThrottle)
		up.ArrayThrottle = &n
	}
	if up.JobUpdate == (store.JobUpdate{}) {
		return cluster.Errorf(cluster.ErrInvalid, "nothing to update: give JobName=, TimeLimit=, Partition=, NumNodes=, Dependency=, Nice=, QOS=, Priority= or ArrayTaskThrottle=")
	}
	if _, err := s.propose(ctx, up); err != nil {
		return err
	}
	s.touch(j.ID)
	return nil
}

// checkThrottle refuses ArrayTaskThrottle=n for job j: n must not be
// negative (Slurm's "Invalid ArrayTaskThrottle value"), and j must be a
// task of an array.
func checkThrottle(j *cluster.Job, n int32) error {
	switch {
	case n < 0:
		return cluster.Errorf(cluster.ErrInvalid, "Invalid ArrayTaskThrottle value %d: give the most tasks to run at once, 0 for no limit", n)
	case j.Array == nil:
		return cluster.Errorf(cluster.ErrInvalid, "job %d is not a task of a job array: ArrayTaskThrottle= changes an array's", j.ID)
	}
	return nil
}

// updateRequest fills up with the partition, node count, dependency, nice,
// QoS and priority req asks for pending job j, checked on a copy of the
// job as a submit is.
func (s *Server) updateRequest(ctx context.Context, j *cluster.Job, req *phalanxv1.UpdateJobRequest, up *store.JobUpdate) error {
	if req.Partition == nil && req.Nodes == nil && req.Dependency == nil && req.Nice == nil && req.Qos == nil && req.Priority == nil {
		return nil
	}
	if j.State != cluster.JobPending {
		return cluster.Errorf(cluster.ErrInvalid, "job %d is %s: what it asks for changes only while it is pending (Job is no longer pending execution)", j.ID, j.State)
	}
	id, lvl, ok := s.access.caller(ctx)
	operator := !ok || lvl >= levelOperator
	c := j.Clone()
	if up.TimeLimit != nil { // a new limit is checked with the new partition
		c.TimeLimit = *up.TimeLimit
	}
	if req.Partition != nil {
		c.Partition = *req.Partition
		if c.Partition == "" {
			return cluster.Errorf(cluster.ErrInvalid, "Partition= needs a partition name")
		}
	}
	if req.Nodes != nil { // -G's total kept: split again, or refused
		if err := c.SetNodes(int(*req.Nodes)); err != nil {
			return err
		}
	}
	gpus, mem := c.GPUsPerNode, c.MemoryMB
	if req.Dependency != nil {
		d, err := cluster.ParseDependency(*req.Dependency)
		if err != nil {
			return err
		}
		if slices.Contains(d.Jobs(), j.ID) {
			return cluster.Errorf(cluster.ErrInvalid, "Job dependency problem: job %d cannot depend on itself", j.ID)
		}
		c.Dependency = d
		if err := s.gate.checkDependency(c); err != nil {
			return err
		}
	}
	if req.Nice != nil {
		c.Nice = int(*req.Nice)
		if c.Nice < j.Nice && !operator {
			s.access.audit(ctx, "update", "permission denied", "user", id.User, "uid", id.UID, "job", j.ID, "nice", c.Nice)
			return cluster.Errorf(cluster.ErrPermission, "permission denied: %s may raise job %d's nice value (%d), not lower it: ask an operator", id, j.ID, j.Nice)
		}
	}
	if req.Qos != nil {
		c.QoS = cluster.QoS(*req.Qos)
	}
	if req.Priority != nil {
		if !operator {
			s.access.audit(ctx, "update", "permission denied", "user", id.User, "uid", id.UID, "job", j.ID, "priority", *req.Priority)
			return cluster.Errorf(cluster.ErrPermission, "permission denied: Priority= is for operators and administrators; lower your own job's priority with Nice=")
		}
		c.Priority = *req.Priority
	}
	if err := checkConstraints(c); err != nil {
		return err
	}
	// admit resolves what a submit leaves to the cluster; a pending job
	// has those already, and keeps its own hang timeout.
	hang := c.HangTimeout
	if c.HangTimeout == 0 {
		c.HangTimeout = hangOff
	}
	st := s.store.Config()
	if err := s.admit(c, st); err != nil {
		if errors.Is(err, cluster.ErrNotFound) { // the partition asked for: the request's fault, the job exists
			return cluster.Errorf(cluster.ErrInvalid, "%s", err)
		}
		return err
	}
	if req.Partition != nil && c.Partition != j.Partition {
		if err := takesJobs(st.Partitions, c.Partition); err != nil {
			return err
		}
	}
	c.HangTimeout = hang
	if req.Partition != nil {
		up.Partition = &c.Partition
	}
	if req.Nodes != nil {
		up.Nodes = &c.Nodes
	}
	if gpus != j.GPUsPerNode || mem != j.MemoryMB {
		if s.store.FeatureLevel() < store.FeatureUpdateGPUs {
			return cluster.Errorf(cluster.ErrUnsatisfiable, "NumNodes=%d: job %d's -G total would be split again over the new nodes, which a controller of an earlier release would not do: finish upgrading the controllers first", c.Nodes, j.ID)
		}
		up.GPUsPerNode, up.MemoryMB = &gpus, &mem
	}
	if req.Dependency != nil {
		up.Dependency = &c.Dependency
	}
	if req.Nice != nil {
		up.Nice = &c.Nice
	}
	if req.Qos != nil {
		up.QoS = &c.QoS
	}
	if req.Priority != nil {
		up.Priority = &c.Priority
	}
	return nil
}

// priorityHold reads Priority= as Slurm's scontrol(1) does: "By setting a
// job's priority to zero it is held. Set the priority to a non-zero value
// to permit it to run." Priority=0 is a hold (an operator's or, asked by
// the job's owner, a user's: Slurm lets a user lower a priority, to zero
// too), and a positive one on a held job releases it too, still checked
// as a Priority= (an operator's, updateRequest).
func priorityHold(j *cluster.Job, req *phalanxv1.UpdateJobRequest) *phalanxv1.UpdateJobRequest {
	if req.Priority == nil || req.Hold != phalanxv1.HoldRequest_HOLD_REQUEST_UNSPECIFIED {
		return req
	}
	switch {
	case *req.Priority == 0:
		req = proto.Clone(req).(*phalanxv1.UpdateJobRequest)
		req.Hold = phalanxv1.HoldRequest_HOLD_REQUEST_HOLD
		req.Priority = nil // the admin's part stays
	case *req.Priority > 0 && j.Hold != cluster.HoldNone:
		req = proto.Clone(req).(*phalanxv1.UpdateJobRequest)
		req.Hold = phalanxv1.HoldRequest_HOLD_REQUEST_RELEASE
	}
	return req
}

// newHold says how job j is held after req, as Slurm's rules have it: a
// hold by an operator is an admin hold (uhold: a user hold, whoever asks),
// and only an operator releases an admin hold. Only a pending job is held
// or released.
func (s *Server) newHold(ctx context.Context, j *cluster.Job, req phalanxv1.HoldRequest) (cluster.Hold, error) {
	if j.State != cluster.JobPending {
		return 0, cluster.Errorf(cluster.ErrInvalid, "Job is no longer pending execution: job %d is %s, and only a pending job is held or released", j.ID, j.State)
	}
	id, lvl, ok := s.access.caller(ctx)
	operator := !ok || lvl >= levelOperator // no caller: an insecure test server's, all powerful
	if j.Hold == cluster.HoldAdmin && !operator {
		s.access.audit(ctx, "hold", "permission denied", "user", id.User, "uid", id.UID, "job", j.ID)
		return 0, cluster.Errorf(cluster.ErrPermission, "permission denied: job %d was held by an operator (JobHeldAdmin): only an operator may release or change its hold", j.ID)
	}
	switch req {
	case phalanxv1.HoldRequest_HOLD_REQUEST_HOLD:
		if operator {
			return cluster.HoldAdmin, nil
		}
		return cluster.HoldUser, nil
	case phalanxv1.HoldRequest_HOLD_REQUEST_USER_HOLD:
		return cluster.HoldUser, nil
	case phalanxv1.HoldRequest_HOLD_REQUEST_RELEASE:
		return cluster.HoldNone, nil
	}
	return 0, cluster.Errorf(cluster.ErrInvalid, "hold request %v: give hold, uhold or release", req)
}

// requestedLimit is the limit an update asks for, in seconds: as given, or
// the job's own moved by a change (TimeLimit=+30); nil: none asked.
func requestedLimit(j *cluster.Job, req *phalanxv1.UpdateJobRequest) (*int64, error) {
	if req.TimeLimitZero {
		return zeroLimit(j, req)
	}
	if req.TimeLimitChangeSeconds == nil {
		return req.TimeLimitSeconds, nil
	}
	change := *req.TimeLimitChangeSeconds
	switch {
	case req.TimeLimitSeconds != nil:
		return nil, cluster.Errorf(cluster.ErrInvalid, "give a new time limit or a change to it, not both")
	case j.TimeLimit == 0:
		return nil, cluster.Errorf(cluster.ErrInvalid, "job %d has no time limit (UNLIMITED): give one, not a change (TimeLimit=+N)", j.ID)
	}
	secs := int64(j.TimeLimit/time.Second) + change
	if secs <= 0 {
		return nil, cluster.Errorf(cluster.ErrInvalid, "job %d's time limit %s less %s leaves none: give a smaller change",
			j.ID, cluster.FormatLimit(j.TimeLimit), cluster.FormatLimit(time.Duration(-change)*time.Second))
	}
	return &secs, nil
}

// zeroLimit is scontrol update TimeLimit=0 as Slurm's scontrol reads it: a
// limit of zero, which a running job has passed (it ends TIMEOUT at once);
// one second, the least Phalanx records (0 is none). A pending job would
// end the moment it started: that is refused.
func zeroLimit(j *cluster.Job, req *phalanxv1.UpdateJobRequest) (*int64, error) {
	switch {
	case req.TimeLimitSeconds != nil || req.TimeLimitChangeSeconds != nil:
		return nil, cluster.Errorf(cluster.ErrInvalid, "give one time limit: a limit of zero, another limit, or a change")
	case j.State == cluster.JobPending:
		return nil, cluster.Errorf(cluster.ErrInvalid, "TimeLimit=0: job %d is pending, and a limit of zero (Slurm's scontrol TimeLimit=0; sbatch --time=0 is none) would end it TIMEOUT the moment it started: give a limit, TimeLimit=UNLIMITED for none, or scancel it", j.ID)
	}
	one := int64(1)
	return &one, nil
}

// newTimeLimit checks a new time limit for job j (seconds; 0 lifts it),
// pending or running: a running job's limit counts from its start, and its
// agents stop it at the new one (at once, TIMEOUT, if it has run longer).
func (s *Server) newTimeLimit(ctx context.Context, j *cluster.Job, secs int64, partition string) (time.Duration, error) {
	const most = int64(cluster.MaxTimeLimit / time.Second)
	switch {
	case secs < 0:
		return 0, cluster.Errorf(cluster.ErrInvalid, "time limit %d seconds: give a positive limit, or UNLIMITED", secs)
	case secs > most:
		return 0, cluster.Errorf(cluster.ErrInvalid, "time limit of %d seconds is longer than %d days: ask for less, or for UNLIMITED", secs, cluster.MaxTimeLimit/(24*time.Hour))
	case !limitChanges(j.State):
		return 0, cluster.Errorf(cluster.ErrInvalid, "job %d is %s: its time limit changes only while it is pending or running", j.ID, j.State)
	}
	limit := time.Duration(secs) * time.Second
	longer := limit == 0 || (j.TimeLimit != 0 && limit > j.TimeLimit)
	if id, lvl, ok := s.access.caller(ctx); ok && longer && lvl < levelOperator {
		s.access.audit(ctx, "update", "permission denied", "user", id.User, "uid", id.UID, "job", j.ID, "time_limit", limit)
		return 0, cluster.Errorf(cluster.ErrPermission, "permission denied: %s may shorten job %d's time limit (%s), not lengthen it: ask an operator",
			id, j.ID, cluster.FormatLimit(j.TimeLimit))
	}
	if part := s.partition(partition); part != nil && part.MaxTime > 0 && (limit == 0 || limit > part.MaxTime) {
		return 0, cluster.Errorf(cluster.ErrInvalid, "time limit %s exceeds partition %s's MaxTime %s: give at most %[3]s, or another partition with it (Partition=)",
			cluster.FormatLimit(limit), part.Name, cluster.FormatLimit(part.MaxTime))
	}
	return limit, nil
}

// limitChanges reports whether a job in state st may have its time limit
// changed: while it waits or runs, not once its attempt is ending (its
// tasks stop whatever the limit).
func limitChanges(st cluster.JobState) bool {
	return st == cluster.JobPending || st == cluster.JobConfiguring || st == cluster.JobRunning
}

// partition returns the partition named, or nil.
func (s *Server) partition(name string) *cluster.Partition {
	st, err := s.store.State()
	if err != nil {
		return nil
	}
	for _, p := range st.Partitions {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func (c *controllerService) RequeueJob(ctx context.Context, req *phalanxv1.RequeueJobRequest) (*phalanxv1.RequeueJobResponse, error) {
	ids, err := c.s.requeue(ctx, req.JobIds)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &phalanxv1.RequeueJobResponse{}
	for _, id := range ids {
		out.Requeued = append(out.Requeued, uint64(id))
	}
	return out, nil
}

// requeue stops running jobs to put them back in the queue (scontrol
// requeue): their owner or an operator may. A job that is not running is
// refused with why: a pending one is in the queue already, one being
// requeued or preempted will be, and a finished one is history (resubmit
// it).
func (s *Server) requeue(ctx context.Context, ids []uint64) ([]cluster.JobID, error) {
	if len(ids) == 0 {
		return nil, cluster.Errorf(cluster.ErrInvalid, "requeue: name the jobs to requeue")
	}
	var jobs []cluster.JobID
	for _, id := range ids {
		j, err := s.visible(cluster.JobID(id), false)
		if err != nil {
			return nil, err
		}
		if err := s.access.mayChange(ctx, j, "requeue"); err != nil {
			return nil, err
		}
		switch {
		case j.State == cluster.JobPending:
			return nil, cluster.Errorf(cluster.ErrInvalid, "job %d is pending: it is in the queue already", j.ID)
		case j.State.ComingBack():
			return nil, cluster.Errorf(cluster.ErrInvalid, "job %d is %s: it is requeued already, and runs again once its tasks have stopped", j.ID, j.State)
		case j.State.Terminal():
			return nil, cluster.Errorf(cluster.ErrInvalid, "job %d has ended (%s): Phalanx requeues running jobs only; submit it again", j.ID, j.State)
		case j.Restart.MaxRestarts == 0:
			return nil, cluster.Errorf(cluster.ErrConflict, "Requested operation is presently disabled for job %d: it was submitted with --no-requeue (or --max-restarts=0)", j.ID)
		}
		jobs = append(jobs, j.ID)
	}
	res, err := s.propose(ctx, fsm.RequeueJobs{IDs: jobs, Time: s.cfg.Clock.Now()})
	if err != nil {
		return nil, err
	}
	return res.IDs, nil
}
