package controller

import (
	"context"
	"fmt"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

// own makes a submitted job run as its submitter: the identity of the
// call, not what the request claims. A request that claims another uid is
// refused, unless an administrator sent it (root submitting for a user,
// as with sbatch --uid). DisableRootJobs refuses jobs that would run as
// root.
func (s *Server) own(ctx context.Context, job *cluster.Job) error {
	id, lvl, ok := s.caller(ctx)
	switch {
	case !ok: // no authentication: the request's word is all there is
	case lvl == levelAdmin && job.User != "" && job.UID != int(id.UID):
		// an administrator's submit for another user keeps its owner
	case job.UID != int(id.UID):
		s.audit(ctx, "submit", "permission denied", "user", id.User, "uid", id.UID, "claimed_uid", job.UID)
		return cluster.Errorf(cluster.ErrPermission, "permission denied: the job asks to run as uid %d, but you are %s: a job runs as the user who submits it", job.UID, id)
	default:
		job.User, job.UID, job.GID = id.User, int(id.UID), int(id.GID)
	}
	if ok && job.Priority != 0 && lvl < levelOperator {
		s.audit(ctx, "submit", "permission denied", "user", id.User, "uid", id.UID, "priority", job.Priority)
		return cluster.Errorf(cluster.ErrPermission, "permission denied: --priority is for operators and administrators; lower your own job's priority with --nice")
	}
	if job.UID <= 0 && s.cfg.DisableRootJobs { // a negative uid runs as the agent: root
		return cluster.Errorf(cluster.ErrPermission, "permission denied: DisableRootJobs is set, so no job may run as root: submit as another user")
	}
	return nil
}

// mayChange refuses a change to job j (what: "cancel") unless the caller
// owns it or is an operator.
func (s *Server) mayChange(ctx context.Context, j *cluster.Job, what string) error {
	id, lvl, ok := s.caller(ctx)
	if !ok || lvl >= levelOperator || j.UID == int(id.UID) {
		return nil
	}
	s.audit(ctx, what, "permission denied", "user", id.User, "uid", id.UID, "job", j.ID, "owner", j.User)
	return cluster.Errorf(cluster.ErrPermission, "permission denied: job %d %s; %s may %s only their own jobs", j.ID, s.owner(j), id, what)
}

// owner says whose job j is in a refusal: its user, unless PrivateData=jobs
// hides other users' jobs (the refusal must not tell what a listing hides).
func (s *Server) owner(j *cluster.Job) string {
	if s.cfg.PrivateJobs {
		return "is another user's"
	}
	return fmt.Sprintf("belongs to %s (uid %d)", j.User, j.UID)
}

// ownJobsOnly returns the uid a caller's filter must be narrowed to (a
// user acting on jobs by name or state acts on their own), and whether to
// narrow it at all.
func (s *Server) ownJobsOnly(ctx context.Context) (int, bool) {
	id, lvl, ok := s.caller(ctx)
	if !ok || lvl >= levelOperator {
		return 0, false
	}
	return int(id.UID), true
}

// seesPrivate reports whether the caller may read job j's script and
// environment: its owner and operators may (as with Slurm's batch
// script).
func (s *Server) seesPrivate(ctx context.Context, j *cluster.Job) bool {
	id, lvl, ok := s.caller(ctx)
	return !ok || lvl >= levelOperator || j.UID == int(id.UID)
}

// seesPrivateOf is seesPrivate for a job known by its ID (false when
// there is no such job: the read that follows says so).
func (s *Server) seesPrivateOf(ctx context.Context, id cluster.JobID) bool {
	j, err := s.store.JobRecord(id)
	return err == nil && s.seesPrivate(ctx, j)
}

// actsFor refuses a node API call about node unless its own agent (a node
// credential naming it) or an administrator makes it: a node reports for
// itself only, and a process without the key for none.
func (s *Server) actsFor(ctx context.Context, node string) error {
	id, lvl, ok := s.caller(ctx)
	switch {
	case !ok, id.Kind == auth.KindNode && id.Node == node, id.Kind != auth.KindNode && lvl == levelAdmin:
		return nil
	}
	s.audit(ctx, "node API", "permission denied", "caller", id.String(), "node", node)
	return cluster.Errorf(cluster.ErrPermission, "permission denied: only node %s's agent (or an administrator) may speak for node %s; this call is from %s", node, node, id)
}

// hidePrivate narrows a listing to the caller's own jobs when PrivateJobs
// is set and the caller is a user.
func (s *Server) hidePrivate(ctx context.Context, q *store.JobQuery) {
	uid, narrow := s.ownJobsOnly(ctx)
	if !s.cfg.PrivateJobs || !narrow {
		return
	}
	match := q.Match
	q.Match = func(j *cluster.Job) bool { return j.UID == uid && (match == nil || match(j)) }
}

// mayRead refuses a user another user's job when PrivateJobs is set.
func (s *Server) mayRead(ctx context.Context, j *cluster.Job) error {
	uid, narrow := s.ownJobsOnly(ctx)
	if !s.cfg.PrivateJobs || !narrow || j.UID == uid {
		return nil
	}
	return cluster.Errorf(cluster.ErrPermission, "permission denied: job %d is another user's, and PrivateData=jobs hides other users' jobs", j.ID)
}

// hiddenJobs says which jobs' events a caller may not read: with
// PrivateJobs, a user reads only their own jobs' (a job forgotten since
// is nobody's). nil: the caller reads every job's.
func (s *Server) hiddenJobs(ctx context.Context) func(cluster.JobID) bool {
	uid, narrow := s.ownJobsOnly(ctx)
	if !s.cfg.PrivateJobs || !narrow {
		return nil
	}
	mine := map[cluster.JobID]bool{}
	return func(id cluster.JobID) bool {
		own, seen := mine[id]
		if !seen {
			j, err := s.store.JobRecord(id)
			own = err == nil && j.UID == uid
			mine[id] = own
		}
		return !own
	}
}
