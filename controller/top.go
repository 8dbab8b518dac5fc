package controller

import (
	"context"
	"maps"
	"slices"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/scheduler"
	"github.com/phalanx-hpc/phalanx/store"
)

// scontrol top. Slurm puts jobs first among their user's pending jobs of
// the same partition, account and QoS by adjusting nice values. Phalanx
// only raises nice values, as an owner may on their own jobs: the listed
// jobs keep their place among other users' jobs, and the owner's other
// jobs of the group (and each listed job after the one before it) move
// below. So an owner may top their own jobs, and an operator anyone's.
// A job requeued after a failure still goes first, as the scheduler puts
// requeued jobs before the others of their tier and QoS.

func (c *controllerService) TopJobs(ctx context.Context, req *phalanxv1.TopJobsRequest) (*phalanxv1.TopJobsResponse, error) {
	ids, err := c.s.top(ctx, req.JobIds)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &phalanxv1.TopJobsResponse{}
	for _, id := range ids {
		out.Reniced = append(out.Reniced, uint64(id))
	}
	return out, nil
}

// top orders the listed jobs first in their group, and returns the jobs it
// reniced. Listed jobs outside the first one's group are left alone, as in
// Slurm.
func (s *Server) top(ctx context.Context, ids []uint64) ([]cluster.JobID, error) {
	if len(ids) == 0 {
		return nil, cluster.Errorf(cluster.ErrInvalid, "top: name the pending jobs to put first")
	}
	var listed []*cluster.Job
	for _, id := range ids {
		j, err := s.visible(cluster.JobID(id), false)
		if err != nil {
			return nil, err
		}
		if err := s.access.mayChange(ctx, j, "reorder"); err != nil {
			return nil, err
		}
		switch {
		case j.State != cluster.JobPending:
			return nil, cluster.Errorf(cluster.ErrInvalid, "job %d is %s: only pending jobs can be put first", j.ID, j.State)
		case j.Hold != cluster.HoldNone: // Slurm's words
			return nil, cluster.Errorf(cluster.ErrInvalid, "Job is in held state, pending scheduler release for job %d", j.ID)
		}
		if slices.ContainsFunc(listed, func(l *cluster.Job) bool { return l.ID == j.ID }) || len(listed) > 0 && !sameTopGroup(listed[0], j) {
			continue
		}
		listed = append(listed, j)
	}
	now := s.cfg.Clock.Now()
	opts := s.priorityOptions()
	score := func(j *cluster.Job) int64 { return scheduler.Priority(j, now, opts) }
	nice := map[cluster.JobID]int64{} // the new nice values
	lower := func(j *cluster.Job, below int64) int64 {
		sc := score(j)
		if sc >= below {
			nice[j.ID] = int64(j.Nice) + sc - below + 1
			sc = below - 1
		}
		return sc
	}
	limit := score(listed[0])
	for _, j := range listed[1:] {
		limit = lower(j, limit)
	}
	for _, o := range s.store.ActiveJobs() {
		if o.State == cluster.JobPending && sameTopGroup(listed[0], o) && !slices.ContainsFunc(listed, func(l *cluster.Job) bool { return l.ID == o.ID }) {
			lower(o, limit)
		}
	}
	var changed []cluster.JobID
	for _, id := range slices.Sorted(maps.Keys(nice)) {
		if nice[id] > maxNice {
			return changed, cluster.Errorf(cluster.ErrInvalid, "job %d would need nice %d to go below the others, above the limit %d", id, nice[id], maxNice)
		}
		n := int(nice[id])
		if _, err := s.propose(ctx, fsm.UpdateJob{ID: id, JobUpdate: store.JobUpdate{Nice: &n}}); err != nil {
			return changed, err
		}
		changed = append(changed, id)
	}
	s.kickScheduler()
	return changed, nil
}

// sameTopGroup: b is pending work of a's user, partition, account and QoS.
func sameTopGroup(a, b *cluster.Job) bool {
	return a.UID == b.UID && a.User == b.User && a.Partition == b.Partition && a.Account == b.Account && a.QoS.Level() == b.QoS.Level()
}
