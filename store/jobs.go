package store

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// NextJobID is the smallest ID above every submitted job: 1 on an empty
// store. The leader hands out IDs from it; they are chosen before the
// SubmitJob command is proposed.
func (s *Store) NextJobID() cluster.JobID {
	id := cluster.JobID(1)
	_ = s.view(func(tx *bolt.Tx) error {
		if v := getUint64(tx.Bucket(bucketMeta), keyNextJob); v > 0 {
			id = cluster.JobID(v)
		}
		return nil
	})
	return id
}

// SubmitJob stores a new job. Its ID must be unused (else ErrConflict) and
// non-zero (else ErrInvalid).
func (s *Store) SubmitJob(idx uint64, j *cluster.Job) error {
	return s.update(idx, func(tx *bolt.Tx) error {
		if j == nil || j.ID == 0 {
			return fmt.Errorf("submit: a job with a non-zero ID is required: %w", cluster.ErrInvalid)
		}
		if tx.Bucket(bucketJobs).Get(jobKey(j.ID)) != nil {
			return fmt.Errorf("submit job %d: ID already used: %w", j.ID, cluster.ErrConflict)
		}
		meta := tx.Bucket(bucketMeta)
		if next := uint64(j.ID) + 1; next > getUint64(meta, keyNextJob) {
			if err := putUint64(meta, keyNextJob, next); err != nil {
				return err
			}
		}
		return putJob(tx, j)
	})
}

// ReportTask applies an agent's task report (cluster.ApplyTaskReport). A
// report for an unknown job gives ErrNotFound; a stale or repeated one is
// ignored.
func (s *Store) ReportTask(idx uint64, r cluster.TaskReport) error {
	return s.update(idx, func(tx *bolt.Tx) error {
		j, err := getJob(tx, r.JobID)
		if err != nil {
			return err
		}
		if j == nil {
			return fmt.Errorf("task report for job %d: %w", r.JobID, cluster.ErrNotFound)
		}
		if !cluster.ApplyTaskReport(j, r) {
			return nil
		}
		return putJob(tx, j)
	})
}

// CancelJobs cancels the named jobs (cluster.Cancel) and returns those that
// changed, in the order given. Unknown IDs are skipped; only when none of the
// IDs exists is the result an error wrapping ErrNotFound. Jobs that already
// ended are left as they are and not returned.
func (s *Store) CancelJobs(idx uint64, ids []cluster.JobID, t time.Time, reason string) ([]cluster.JobID, error) {
	var changed []cluster.JobID
	err := s.update(idx, func(tx *bolt.Tx) error {
		changed = nil
		found := 0
		for _, id := range ids {
			j, err := getJob(tx, id)
			if err != nil {
				return err
			}
			if j == nil {
				continue
			}
			found++
			if !cluster.Cancel(j, t, reason) {
				continue
			}
			if err := putJob(tx, j); err != nil {
				return err
			}
			changed = append(changed, id)
		}
		if found == 0 && len(ids) > 0 {
			return fmt.Errorf("cancel jobs %v: %w", ids, cluster.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// PreemptJobs preempts the named jobs (cluster.Preempt): each placed job
// becomes PREEMPTED, its tasks are to be stopped, and it is requeued when
// they have ended. It returns the jobs that changed, in the order given;
// unknown IDs and jobs that are not placed are skipped.
func (s *Store) PreemptJobs(idx uint64, ids []cluster.JobID, t time.Time) ([]cluster.JobID, error) {
	var changed []cluster.JobID
	err := s.update(idx, func(tx *bolt.Tx) error {
		changed = nil
		for _, id := range ids {
			j, err := getJob(tx, id)
			if err != nil {
				return err
			}
			if j == nil || !cluster.Preempt(j, t) {
				continue
			}
			if err := putJob(tx, j); err != nil {
				return err
			}
			changed = append(changed, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// Job returns one job; ErrNotFound if there is none.
func (s *Store) Job(id cluster.JobID) (*cluster.Job, error) {
	var j *cluster.Job
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		j, err = getJob(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	if j == nil {
		return nil, fmt.Errorf("job %d: %w", id, cluster.ErrNotFound)
	}
	return j, nil
}

// Jobs returns every job the filter accepts (nil: all), by ID. It reads the
// whole history; use ActiveJobs for what is pending or holds resources.
func (s *Store) Jobs(filter func(*cluster.Job) bool) ([]*cluster.Job, error) {
	var out []*cluster.Job
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
			var j cluster.Job
			if err := json.Unmarshal(v, &j); err != nil {
				return fmt.Errorf("decode job %x: %w", k, err)
			}
			if filter == nil || filter(&j) {
				out = append(out, &j)
			}
			return nil
		})
	})
	return out, err
}

// ActiveJobs returns the jobs that have not ended or still hold resources,
// by ID.
func (s *Store) ActiveJobs() ([]*cluster.Job, error) {
	var out []*cluster.Job
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, err = activeJobs(tx)
		return err
	})
	return out, err
}
