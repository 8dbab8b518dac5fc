package cli

// scontrol hold, uhold, release, requeue and top: commands that act on a
// list of jobs. Each takes job IDs as Slurm's do (jobids.go): an array's
// ID acts on its tasks, ARRAYID_TASKID and ARRAYID_[LIST] on those tasks.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/grpc/codes"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// holdRequests are the API's requests for scontrol hold, uhold and release.
var holdRequests = map[string]phalanxv1.HoldRequest{
	"hold":    phalanxv1.HoldRequest_HOLD_REQUEST_HOLD,
	"uhold":   phalanxv1.HoldRequest_HOLD_REQUEST_USER_HOLD,
	"release": phalanxv1.HoldRequest_HOLD_REQUEST_RELEASE,
}

// isPending: what an array's ID stands for in hold, release and top.
func isPending(j *phalanxv1.Job) bool { return j.State == string(cluster.JobPending) }

// isStarted: what an array's ID stands for in requeue (the tasks in the
// queue that are not pending).
func isStarted(j *phalanxv1.Job) bool { return !isPending(j) }

// hold runs `scontrol hold|uhold|release JOBID[,JOBID...]` (the IDs may
// also be separate arguments). An array's ID holds or releases its pending
// tasks. Every job is tried; the errors are joined, one line each.
func (k *commands) hold(c *ucli.Context, verb string, args []string) error {
	return k.onJobs(c, verb, args, func(cn *conn, refs []jobRef) error {
		return cn.eachJob(c.Context, verb, refs, isPending, func(ctx context.Context, id uint64) error {
			_, err := cn.api.UpdateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, Hold: holdRequests[verb]})
			return err
		})
	})
}

// requeue runs `scontrol requeue JOBID[,JOBID...]`: the running jobs are
// stopped and put back in the queue, same IDs. An array's ID requeues its
// running tasks. Every job is tried; the errors are joined, one line each.
func (k *commands) requeue(c *ucli.Context, args []string) error {
	return k.onJobs(c, "requeue", args, func(cn *conn, refs []jobRef) error {
		return cn.eachJob(c.Context, "requeue", refs, isStarted, func(ctx context.Context, id uint64) error {
			_, err := cn.api.RequeueJob(ctx, &phalanxv1.RequeueJobRequest{JobIds: []uint64{id}})
			return err
		})
	})
}

// top puts pending jobs first among their owner's pending jobs of the
// same partition, account and QoS, in the order given (scontrol top); an
// array's ID stands for its pending tasks, in index order. The jobs go in
// one request: their order is the point.
func (k *commands) top(c *ucli.Context, args []string) error {
	return k.onJobs(c, "top", args, func(cn *conn, refs []jobRef) error { return topJobs(c.Context, cn, refs) })
}

// topJobs asks for the jobs refs name to go first, in one request.
func topJobs(ctx context.Context, cn *conn, refs []jobRef) error {
	targets, err := cn.jobTargets(ctx, refs, isPending)
	if err != nil {
		return err
	}
	var ids []uint64
	var errs jobErrors
	for _, t := range targets {
		if t.id == 0 {
			errs.invalid(t)
			continue
		}
		ids = append(ids, t.id)
	}
	if len(ids) > 0 {
		err := cn.call(ctx, func(ctx context.Context) error {
			_, err := cn.api.TopJobs(ctx, &phalanxv1.TopJobsRequest{JobIds: ids})
			return err
		})
		var ae *APIError
		switch {
		case err == nil:
		case isNotFound(err) && len(ids) == 1:
			errs = append(errs, fmt.Sprintf("Invalid job id specified for job %d", ids[0]))
		case errors.As(err, &ae) && strings.HasSuffix(ae.Msg, fmt.Sprintf(" for job %d", ids[0])) && len(ids) == 1:
			errs = append(errs, ae.Msg) // Slurm's own line: "... for job N"
		default:
			errs = append(errs, "scontrol: error: top: "+err.Error())
		}
	}
	return errs.err()
}

// onJobs reads the JOBID[,JOBID...] arguments of scontrol VERB, connects,
// and runs act on the jobs they name.
func (k *commands) onJobs(c *ucli.Context, verb string, args []string, act func(cn *conn, refs []jobRef) error) error {
	refs, err := jobListArgs(verb, args)
	if err != nil {
		return err
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	return act(cn, refs)
}

// jobListArgs reads the JOBID[,JOBID...] arguments of scontrol VERB.
func jobListArgs(verb string, args []string) ([]jobRef, error) {
	refs, err := parseJobRefs(args...)
	switch {
	case err != nil: // it says how to write one
		return nil, fmt.Errorf("%s: %w", verb, err)
	case len(refs) == 0:
		return nil, fmt.Errorf("%s: no job ID given: write scontrol %s JOBID[,JOBID...]", verb, verb)
	}
	return refs, nil
}

// eachJob calls do with each job refs name (jobTargets; applies picks an
// array's tasks), one at a time, and reports the failures, one line per
// job (jobErrors).
func (cn *conn) eachJob(ctx context.Context, verb string, refs []jobRef, applies func(*phalanxv1.Job) bool, do func(ctx context.Context, id uint64) error) error {
	targets, err := cn.jobTargets(ctx, refs, applies)
	if err != nil {
		return err
	}
	var errs jobErrors
	for _, t := range targets {
		if t.id == 0 {
			errs.invalid(t)
			continue
		}
		if err := cn.call(ctx, func(ctx context.Context) error { return do(ctx, t.id) }); err != nil {
			errs.add(verb, t, err)
		}
	}
	return errs.err()
}

// jobErrors are scontrol's failures on a list of jobs, a line each: a job
// that does not exist as Slurm's scontrol says it, "Invalid job id
// specified for job NAME"; the others "scontrol: error: VERB job NAME: why".
type jobErrors []string

func (e *jobErrors) invalid(t jobTarget) {
	*e = append(*e, "Invalid job id specified for job "+t.name)
}

// slurmJobReasons begin the controllers' refusals that Slurm's scontrol
// prints as "REASON for job N".
var slurmJobReasons = []string{"Job has already finished", "Job is no longer pending execution", "Job is in held state, pending scheduler release"}

func (e *jobErrors) add(verb string, t jobTarget, err error) {
	if isNotFound(err) {
		e.invalid(t)
		return
	}
	var ae *APIError
	for _, reason := range slurmJobReasons {
		if errors.As(err, &ae) && ae.Code == codes.InvalidArgument && strings.HasPrefix(ae.Msg, reason) {
			*e = append(*e, reason+" for job "+t.name)
			return
		}
	}
	*e = append(*e, fmt.Sprintf("scontrol: error: %s job %s: %s", verb, t.name, err))
}

// err is the failures as one error; nil for none.
func (e jobErrors) err() error {
	if len(e) == 0 {
		return nil
	}
	return &rawError{msg: strings.Join(e, "\n")}
}
