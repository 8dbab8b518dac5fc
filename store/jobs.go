package store

import (
	"fmt"
	"slices"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// SubmitJob stores a new job and returns its ID. payload is the job's
// encoded JobPayload (codec.PayloadBytes); nil encodes j's script and
// environment. The store keeps j without them, and the payload on disk
// only (see Store.unflushed), and takes ownership of both. With a request ID it is exactly-once: when the
// request was seen before, nothing is stored and the result is the job that
// request created. Otherwise the job's ID must be non-zero (else
// ErrInvalid) and unused (else ErrConflict).
func (s *Store) SubmitJob(idx uint64, j *cluster.Job, payload, requestID []byte) (cluster.JobID, error) {
	return s.SubmitArray(idx, j, payload, requestID, cluster.ArraySpec{})
}

// SubmitArray is SubmitJob for a job array when array has tasks: one job
// per index, IDs j.ID onwards (all unused, else ErrConflict), each with
// its cluster.ArrayTask, sharing the payload stored under j.ID. It returns
// the array's ID, j.ID. Without tasks it is SubmitJob.
func (s *Store) SubmitArray(idx uint64, j *cluster.Job, payload, requestID []byte, array cluster.ArraySpec) (cluster.JobID, error) {
	var id cluster.JobID
	if payload == nil && j != nil {
		var err error
		if payload, err = codec.PayloadBytes(j); err != nil {
			return 0, fmt.Errorf("submit job %d: %w", j.ID, err)
		}
	}
	if j != nil && (j.Script != "" || j.Env != nil) {
		bare := *j
		bare.Script, bare.Env = "", nil
		j = &bare
	}
	err := s.apply(idx, func(c *change) error {
		if len(requestID) > 0 {
			if r, ok := c.st.requests[string(requestID)]; ok {
				id = r.job
				return nil
			}
		}
		switch {
		case j == nil || j.ID == 0:
			return fmt.Errorf("submit: a job with a non-zero ID is required: %w", cluster.ErrInvalid)
		case j.State != cluster.JobPending:
			return fmt.Errorf("submit job %d: a new job is PENDING, not %s: %w", j.ID, j.State, cluster.ErrInvalid)
		}
		last := j.ID + cluster.JobID(max(len(array.Tasks), 1)) - 1
		for t := j.ID; t <= last; t++ {
			if c.known(t) {
				return fmt.Errorf("submit job %d: ID %d already used: %w", j.ID, t, cluster.ErrConflict)
			}
		}
		id = j.ID
		if last >= c.st.nextJob {
			c.st.nextJob = last + 1
		}
		if len(requestID) > 0 {
			r := request{job: j.ID, time: codec.Time(j.SubmitTime)}
			c.st.requests[string(requestID)] = r
			c.ops = append(c.ops, putRequestOp{key: string(requestID), r: r})
		}
		if len(array.Tasks) == 0 {
			c.putJob(j)
		}
		for i, a := range cluster.NewArrayTasks(j.ID, array) {
			t := *j
			t.ID = j.ID + cluster.JobID(i)
			t.Array = &a
			c.putJob(&t)
			c.st.addArrayTask(t.ID, j.ID)
		}
		c.ops = append(c.ops, putPayloadOp{id: j.ID, payload: payload})
		c.payloads = append(c.payloads, putPayloadOp{id: j.ID, payload: payload})
		return nil
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// ReportTask applies an agent's task report (cluster.ApplyTaskReport). A
// report for a job that was never submitted gives ErrNotFound; a report for
// a finished job, or a stale or repeated one, is ignored.
func (s *Store) ReportTask(idx uint64, r cluster.TaskReport) error {
	return s.apply(idx, func(c *change) error {
		j := c.job(r.JobID)
		if j == nil {
			if c.known(r.JobID) {
				return nil // every task of a finished job has ended already
			}
			return fmt.Errorf("task report for job %d: %w", r.JobID, cluster.ErrNotFound)
		}
		u := j.Update()
		if !cluster.ApplyTaskReport(u, r) {
			return nil
		}
		c.putJob(u)
		return nil
	})
}

// CommitCheckpoint records that rank of the job's attempt committed a
// checkpoint step (cluster.CommitCheckpoint). It reports whether the step
// became the job's latest complete one. A commit for a job gone to the
// history, another attempt, or an old step changes nothing (a job that
// ended but is still active records the steps its tasks committed last).
func (s *Store) CommitCheckpoint(idx uint64, id cluster.JobID, attempt, rank int, step int64, t time.Time) (complete bool, err error) {
	err = s.apply(idx, func(c *change) error {
		j := c.job(id)
		if j == nil {
			if c.known(id) {
				return nil
			}
			return fmt.Errorf("checkpoint of job %d: %w", id, cluster.ErrNotFound)
		}
		u := j.Update()
		changed, done := cluster.CommitCheckpoint(u, attempt, rank, step)
		if changed {
			c.putJob(u)
		}
		if done {
			c.event(cluster.Event{Time: t, Job: id, Kind: cluster.EventCheckpoint, User: cluster.SystemUser,
				Message: fmt.Sprintf("checkpoint step %d complete: committed by all %d ranks of attempt %d", step, len(u.Tasks), attempt)})
		}
		complete = done
		return nil
	})
	return complete, err
}

// CancelJobs cancels the named jobs (cluster.Cancel) and returns those that
// changed, in the order given. Unknown IDs are skipped; only when none of the
// IDs exists is the result an error wrapping ErrNotFound. Jobs that already
// ended are left as they are and not returned. With a request ID it is
// exactly-once: the jobs the request cancelled are remembered, and the
// result is all of them, those of earlier commands with the same ID (a
// retry, another batch) first.
func (s *Store) CancelJobs(idx uint64, ids []cluster.JobID, t time.Time, reason string, requestID []byte) ([]cluster.JobID, error) {
	var changed []cluster.JobID
	err := s.apply(idx, func(c *change) error {
		found := 0
		for _, id := range ids {
			if c.known(id) {
				found++
			}
		}
		if found == 0 && len(ids) > 0 {
			return fmt.Errorf("cancel jobs %v: %w", ids, cluster.ErrNotFound)
		}
		if len(requestID) > 0 {
			key := cancelKey(requestID)
			changed = slices.Clone(c.st.requests[key].cancelled)
			defer func() {
				r := request{cancelled: changed, time: codec.Time(t)}
				c.st.requests[key] = r
				c.ops = append(c.ops, putRequestOp{key: key, r: r})
			}()
		}
		changed = append(changed, changeEach(c, ids, func(_ int, u *cluster.Job) bool { return cluster.Cancel(u, t, reason) })...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// PreemptJobs preempts the named jobs (cluster.Preempt): each placed job
// becomes PREEMPTED, its tasks are to be stopped, and it is requeued when
// they have ended. forIDs names, by position, the job each makes room for
// (missing or 0: none): the attempt records it with that job's current
// attempt, the one pending now. It returns the jobs that changed, in the
// order given; unknown IDs and jobs that are not placed are skipped.
func (s *Store) PreemptJobs(idx uint64, ids, forIDs []cluster.JobID, t time.Time) ([]cluster.JobID, error) {
	var changed []cluster.JobID
	err := s.apply(idx, func(c *change) error {
		changed = changeEach(c, ids, func(k int, u *cluster.Job) bool {
			var forJob cluster.JobAttempt
			if k < len(forIDs) && forIDs[k] != 0 {
				forJob.Job = forIDs[k]
				if p := c.job(forIDs[k]); p != nil {
					forJob.Attempt = p.Attempt
				}
			}
			return cluster.Preempt(u, t, forJob)
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// RequeueJobs stops the named running jobs to put them back in the queue
// (cluster.RequestRequeue). It returns the jobs that changed, in the order
// given; unknown IDs and jobs that are not running are skipped.
func (s *Store) RequeueJobs(idx uint64, ids []cluster.JobID, t time.Time) ([]cluster.JobID, error) {
	return s.changeJobs(idx, ids, func(j *cluster.Job) bool { return cluster.RequestRequeue(j, t) })
}

// SignalJobs records request r (its signal, scope and step) on each named
// running job (cluster.RequestSignal) and returns the jobs it was recorded
// for, in the order given. With a request ID it is exactly-once: a
// request seen before records nothing and answers what it recorded then.
func (s *Store) SignalJobs(idx uint64, ids []cluster.JobID, r cluster.SignalRequest, requestID []byte, t time.Time) ([]cluster.JobID, error) {
	var changed []cluster.JobID
	err := s.apply(idx, func(c *change) error {
		if len(requestID) > 0 {
			key := signalKey(requestID)
			if seen, ok := c.st.requests[key]; ok {
				changed = slices.Clone(seen.cancelled)
				return nil
			}
			defer func() {
				rec := request{cancelled: changed, time: codec.Time(t)}
				c.st.requests[key] = rec
				c.ops = append(c.ops, putRequestOp{key: key, r: rec})
			}()
		}
		for _, id := range ids {
			j := c.job(id)
			if j == nil {
				continue
			}
			u := j.Update()
			if !cluster.RequestSignal(u, r) {
				continue
			}
			c.putJob(u)
			changed = append(changed, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// MissDeadlines ends the named pending jobs that could no longer end
// before their --deadline at t (cluster.MissDeadline), and returns them.
func (s *Store) MissDeadlines(idx uint64, ids []cluster.JobID, t time.Time) ([]cluster.JobID, error) {
	return s.changeJobs(idx, ids, func(j *cluster.Job) bool { return cluster.MissDeadline(j, t) })
}

// changeJobs applies transition to a copy of each named job, in one entry,
// and keeps the copies it changed; it returns their IDs, in the order
// given. Unknown IDs are skipped.
func (s *Store) changeJobs(idx uint64, ids []cluster.JobID, transition func(*cluster.Job) bool) ([]cluster.JobID, error) {
	var changed []cluster.JobID
	err := s.apply(idx, func(c *change) error {
		changed = changeEach(c, ids, func(_ int, u *cluster.Job) bool { return transition(u) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// changeEach applies transition to a copy of each of the jobs ids names
// (k: its position in ids) within c, keeps the copies it changed, and
// returns their IDs in the order given. Unknown IDs are skipped.
func changeEach(c *change, ids []cluster.JobID, transition func(k int, u *cluster.Job) bool) []cluster.JobID {
	var changed []cluster.JobID
	for k, id := range ids {
		j := c.job(id)
		if j == nil {
			continue
		}
		u := j.Update()
		if !transition(k, u) {
			continue
		}
		c.putJob(u)
		changed = append(changed, id)
	}
	return changed
}

// JobUpdate is what UpdateJob changes; nil fields stay as they are.
type JobUpdate struct {
	Name      *string
	TimeLimit *time.Duration
	Hold      *cluster.Hold
	// What the job asks for, changed only while it is pending; the
	// controller has checked the new values as it checks a submit's.
	Partition  *string
	Nodes      *int
	Dependency *cluster.Dependency
	Nice       *int
	QoS        *cluster.QoS
	Priority   *int64
	// GPUsPerNode and MemoryMB: its shape on a new node count
	// (cluster.Job.SetNodes), given together.
	GPUsPerNode *int
	MemoryMB    *int64
	// ArrayThrottle: a task's array's throttle (scontrol update
	// ArrayTaskThrottle=), pending or started; ignored for another job.
	ArrayThrottle *int
}

// pendingOnly reports whether up changes what only a pending job may
// change, and names one such field. The time limit is not one: a running
// job's changes too (runningLimit).
func (up JobUpdate) pendingOnly() (string, bool) {
	switch {
	case up.Hold != nil:
		return "its hold", true
	case up.Partition != nil:
		return "its partition", true
	case up.Nodes != nil:
		return "its node count", true
	case up.Dependency != nil:
		return "its dependency", true
	case up.Nice != nil:
		return "its nice value", true
	case up.QoS != nil:
		return "its QoS", true
	case up.Priority != nil:
		return "its priority", true
	case up.GPUsPerNode != nil || up.MemoryMB != nil:
		return "its GPUs and memory per node", true
	}
	return "", false
}

// UpdateJob changes an active job: its name at any time, its time limit
// while it is pending or running (the agents running its tasks follow the
// new limit, which counts from the start), the rest only while it is
// pending. A job that has ended is history: ErrNotFound. With a request
// ID it is exactly-once: a request seen before for the job changes
// nothing (a retry does not take TimeLimit=-30 off twice); t is when it
// was asked, which the request's record expires from.
func (s *Store) UpdateJob(idx uint64, id cluster.JobID, up JobUpdate, requestID []byte, t time.Time) error {
	return s.apply(idx, func(c *change) error {
		key := updateKey(id, requestID)
		if _, seen := c.st.requests[key]; seen && len(requestID) > 0 {
			return nil
		}
		j := c.job(id)
		if j == nil {
			return fmt.Errorf("job %d: %w", id, cluster.ErrNotFound)
		}
		if !j.InQueue() {
			return cluster.Errorf(cluster.ErrInvalid, "Job has already finished: job %d ended %s, there is nothing to update", id, j.State)
		}
		if what, ok := up.pendingOnly(); ok && j.State != cluster.JobPending {
			return cluster.Errorf(cluster.ErrInvalid, "job %d is %s: %s changes only while it is pending (Job is no longer pending execution)", id, j.State, what)
		}
		if up.TimeLimit != nil && j.State != cluster.JobPending && !runningLimit(j.State) {
			return cluster.Errorf(cluster.ErrInvalid, "job %d is %s: its time limit changes only while it is pending or running", id, j.State)
		}
		u := j.Update()
		if up.Name != nil {
			u.Name = *up.Name
		}
		if up.TimeLimit != nil {
			u.TimeLimit = *up.TimeLimit
		}
		if up.Hold != nil {
			u.Hold = *up.Hold
		}
		if up.Partition != nil {
			u.Partition = *up.Partition
		}
		if up.Nodes != nil {
			u.Nodes = *up.Nodes
		}
		if up.GPUsPerNode != nil {
			u.GPUsPerNode = *up.GPUsPerNode
		}
		if up.MemoryMB != nil {
			u.MemoryMB = *up.MemoryMB
		}
		if up.Dependency != nil {
			u.Dependency = *up.Dependency
		}
		if up.Nice != nil {
			u.Nice = *up.Nice
		}
		if up.QoS != nil {
			u.QoS = *up.QoS
		}
		if up.Priority != nil {
			u.Priority = *up.Priority
		}
		if up.ArrayThrottle != nil && u.Array != nil {
			a := *u.Array // shared with the stored job: a copy changes
			a.Throttle = *up.ArrayThrottle
			u.Array = &a
		}
		c.putJob(u)
		if len(requestID) > 0 {
			r := request{job: id, time: codec.Time(t)}
			c.st.requests[key] = r
			c.ops = append(c.ops, putRequestOp{key: key, r: r})
		}
		return nil
	})
}

// runningLimit reports whether a started job in state st may have its time
// limit changed: while its tasks start or run, not once its attempt ends.
func runningLimit(st cluster.JobState) bool {
	return st == cluster.JobConfiguring || st == cluster.JobRunning
}
