package controller

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/store"
)

// access decides who may do what: it authenticates each call (authn.go)
// and authorises what the call does (here). Its settings are the
// replica's configuration, which does not change while it runs; it reads
// the state only to find a job's owner.
type access struct {
	insecure          bool          // Config.Insecure: no credentials at all
	keys              *auth.Keyring // the cluster keys
	tls               *pki.Material // nil: no TLS
	clock             Clock
	admins, operators []string // Config.AdminUsers, OperatorUsers
	privateJobs       bool     // PrivateData=jobs
	disableRootJobs   bool
	log               *slog.Logger
	jobRecord         func(cluster.JobID) (*cluster.Job, error) // a job, active or finished
}

// newAccess returns the access rules of cfg, with jobRecord to find jobs.
func newAccess(cfg Config, jobRecord func(cluster.JobID) (*cluster.Job, error)) *access {
	return &access{
		insecure:        cfg.Insecure,
		keys:            cfg.AuthKeys,
		tls:             cfg.TLS,
		clock:           cfg.Clock,
		admins:          cfg.AdminUsers,
		operators:       cfg.OperatorUsers,
		privateJobs:     cfg.PrivateJobs,
		disableRootJobs: cfg.DisableRootJobs,
		log:             cfg.Logger,
		jobRecord:       jobRecord,
	}
}

// own makes a submitted job run as its submitter: the identity of the
// call, not what the request claims. A request that claims another uid is
// refused, unless an administrator sent it (root submitting for a user,
// as with sbatch --uid). DisableRootJobs refuses jobs that would run as
// root.
func (a *access) own(ctx context.Context, job *cluster.Job) error {
	id, lvl, ok := a.caller(ctx)
	switch {
	case !ok: // no authentication: the request's word is all there is
	case lvl == levelAdmin && job.User != "" && job.UID != int(id.UID):
		// an administrator's submit for another user keeps its owner
	case job.UID != int(id.UID):
		a.audit(ctx, "submit", "permission denied", "user", id.User, "uid", id.UID, "claimed_uid", job.UID)
		return cluster.Errorf(cluster.ErrPermission, "permission denied: the job asks to run as uid %d, but you are %s: a job runs as the user who submits it", job.UID, id)
	default:
		job.User, job.UID, job.GID = id.User, int(id.UID), int(id.GID)
	}
	if ok && job.Priority != 0 && lvl < levelOperator {
		a.audit(ctx, "submit", "permission denied", "user", id.User, "uid", id.UID, "priority", job.Priority)
		return cluster.Errorf(cluster.ErrPermission, "permission denied: --priority is for operators and administrators; lower your own job's priority with --nice")
	}
	if job.UID <= 0 && a.disableRootJobs { // a negative uid runs as the agent: root
		return cluster.Errorf(cluster.ErrPermission, "permission denied: DisableRootJobs is set, so no job may run as root: submit as another user")
	}
	return nil
}

// mayChange refuses a change to job j (what: "cancel") unless the caller
// owns it or is an operator.
func (a *access) mayChange(ctx context.Context, j *cluster.Job, what string) error {
	id, lvl, ok := a.caller(ctx)
	if !ok || lvl >= levelOperator || j.UID == int(id.UID) {
		return nil
	}
	a.audit(ctx, what, "permission denied", "user", id.User, "uid", id.UID, "job", j.ID, "owner", j.User)
	return cluster.Errorf(cluster.ErrPermission, "permission denied: job %d %s; %s may %s only their own jobs", j.ID, a.owner(j), id, what)
}

// owner says whose job j is in a refusal: its user, unless PrivateData=jobs
// hides other users' jobs (the refusal must not tell what a listing hides).
func (a *access) owner(j *cluster.Job) string {
	if a.privateJobs {
		return "is another user's"
	}
	return fmt.Sprintf("belongs to %s (uid %d)", j.User, j.UID)
}

// ownJobsOnly returns the uid a caller's filter must be narrowed to (a
// user acting on jobs by name or state acts on their own), and whether to
// narrow it at all.
func (a *access) ownJobsOnly(ctx context.Context) (int, bool) {
	id, lvl, ok := a.caller(ctx)
	if !ok || lvl >= levelOperator {
		return 0, false
	}
	return int(id.UID), true
}

// seesPrivate reports whether the caller may read job j's script and
// environment: its owner and operators may (as with Slurm's batch
// script).
func (a *access) seesPrivate(ctx context.Context, j *cluster.Job) bool {
	id, lvl, ok := a.caller(ctx)
	return !ok || lvl >= levelOperator || j.UID == int(id.UID)
}

// seesPrivateOf is seesPrivate for a job known by its ID (false when
// there is no such job: the read that follows says so).
func (a *access) seesPrivateOf(ctx context.Context, id cluster.JobID) bool {
	j, err := a.jobRecord(id)
	return err == nil && a.seesPrivate(ctx, j)
}

// actsFor refuses a node API call about node unless its own agent (a node
// credential naming it) or an administrator makes it: a node reports for
// itself only, and a process without the key for none.
func (a *access) actsFor(ctx context.Context, node string) error {
	id, lvl, ok := a.caller(ctx)
	switch {
	case !ok, id.Kind == auth.KindNode && id.Node == node, id.Kind != auth.KindNode && lvl == levelAdmin:
		return nil
	}
	a.audit(ctx, "node API", "permission denied", "caller", id.String(), "node", node)
	return cluster.Errorf(cluster.ErrPermission, "permission denied: only node %s's agent (or an administrator) may speak for node %s; this call is from %s", node, node, id)
}

// hidePrivate narrows a listing to the caller's own jobs when PrivateJobs
// is set and the caller is a user.
func (a *access) hidePrivate(ctx context.Context, q *store.JobQuery) {
	uid, narrow := a.ownJobsOnly(ctx)
	if !a.privateJobs || !narrow {
		return
	}
	match := q.Match
	q.Match = func(j *cluster.Job) bool { return j.UID == uid && (match == nil || match(j)) }
}

// mayRead refuses a user another user's job when PrivateJobs is set.
func (a *access) mayRead(ctx context.Context, j *cluster.Job) error {
	uid, narrow := a.ownJobsOnly(ctx)
	if !a.privateJobs || !narrow || j.UID == uid {
		return nil
	}
	return cluster.Errorf(cluster.ErrPermission, "permission denied: job %d is another user's, and PrivateData=jobs hides other users' jobs", j.ID)
}

// hiddenJobs says which jobs' events a caller may not read: with
// PrivateJobs, a user reads only their own jobs' (a job forgotten since
// is nobody's). nil: the caller reads every job's.
func (a *access) hiddenJobs(ctx context.Context) func(cluster.JobID) bool {
	uid, narrow := a.ownJobsOnly(ctx)
	if !a.privateJobs || !narrow {
		return nil
	}
	mine := map[cluster.JobID]bool{}
	return func(id cluster.JobID) bool {
		own, seen := mine[id]
		if !seen {
			j, err := a.jobRecord(id)
			own = err == nil && j.UID == uid
			mine[id] = own
		}
		return !own
	}
}
