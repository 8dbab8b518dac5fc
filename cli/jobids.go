package cli

// Job IDs on the command line, as Slurm's commands take them: JOBID (a job
// array's ID stands for its tasks), ARRAYID_TASKID and ARRAYID_[LIST] (the
// indices as sbatch --array writes them, without a throttle), joined by
// commas or given as separate arguments. Every task of an array is a job of
// its own, with its own ID; a job's ArrayTask says which array and index.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// maxTaskIndex bounds the indices a job ID may name: no array has an
// index at MaxArraySizeCeiling or above.
const maxTaskIndex = cluster.MaxArraySizeCeiling

// jobRef is one job, job array or set of array tasks named on a command
// line.
type jobRef struct {
	id    uint64  // the job's ID, or the array's
	tasks []int32 // ARRAYID_...: these indices, sorted; nil: the job, or the whole array
	step  *uint32 // JOBID.STEP (scancel's): a step of the job; nil: the job
}

// String writes r as the user would: 40, 40_3, 40_[1-3,7], 40.2.
func (r jobRef) String() string {
	s := strconv.FormatUint(r.id, 10)
	if r.tasks != nil {
		s = taskSetName(r.id, r.tasks)
	}
	if r.step != nil {
		s += "." + strconv.FormatUint(uint64(*r.step), 10)
	}
	return s
}

// parseStepRefs reads scancel's job IDs: those of parseJobRefs, each
// perhaps with a step, JOBID.STEP (ARRAYID_INDEX.STEP).
func parseStepRefs(args ...string) ([]jobRef, error) {
	var refs []jobRef
	for _, a := range args {
		for _, s := range splitJobList(a) {
			job, step, hasStep := strings.Cut(s, ".")
			r, err := parseJobRef(job)
			if err != nil {
				return nil, err
			}
			if hasStep {
				n, err := strconv.ParseUint(step, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("invalid job id %q: write JOBID.STEP with the step's number (steps are numbered from 0 as srun starts them)", s)
				}
				st := uint32(n)
				r.step = &st
			}
			refs = append(refs, r)
		}
	}
	return refs, nil
}

// names reports whether r names job j: the job itself, a task of the
// array r names by its ID, or one of the tasks r lists.
func (r jobRef) names(j *phalanxv1.Job) bool {
	a := j.GetArrayTask()
	if r.tasks == nil {
		return j.Id == r.id || a != nil && a.ArrayJobId == r.id
	}
	if a == nil || a.ArrayJobId != r.id {
		return false
	}
	_, found := slices.BinarySearch(r.tasks, a.TaskId)
	return found
}

// pick returns the jobs of listed that r names, and the tasks r lists
// that are not among them.
func (r jobRef) pick(listed []*phalanxv1.Job) (named []*phalanxv1.Job, missing []int32) {
	found := map[int32]bool{}
	for _, j := range listed {
		if r.names(j) {
			named = append(named, j)
			found[j.GetArrayTask().GetTaskId()] = true
		}
	}
	for _, t := range r.tasks {
		if !found[t] {
			missing = append(missing, t)
		}
	}
	return named, missing
}

// parseJobRefs reads the job IDs of args, each a comma-separated list (a
// comma inside brackets separates indices: 40_[1,3]).
func parseJobRefs(args ...string) ([]jobRef, error) {
	var refs []jobRef
	for _, a := range args {
		for _, s := range splitJobList(a) {
			r, err := parseJobRef(s)
			if err != nil {
				return nil, err
			}
			refs = append(refs, r)
		}
	}
	return refs, nil
}

// parseJobRef reads JOBID, ARRAYID_INDEX or ARRAYID_[LIST].
func parseJobRef(s string) (jobRef, error) {
	base, idx, isTask := strings.Cut(s, "_")
	id, err := strconv.ParseUint(base, 10, 64)
	if err != nil || id == 0 {
		return jobRef{}, fmt.Errorf("invalid job id %q: write JOBID (a number), ARRAYID_TASKID or ARRAYID_[LIST]", s)
	}
	if !isTask {
		return jobRef{id: id}, nil
	}
	list := idx
	if strings.HasPrefix(idx, "[") && strings.HasSuffix(idx, "]") {
		list = idx[1 : len(idx)-1]
	}
	spec, err := cluster.ParseArray(list, maxTaskIndex)
	if err != nil || strings.ContainsAny(list, "%[]") || len(spec.Tasks) == 0 {
		return jobRef{}, fmt.Errorf("invalid job id %q: write ARRAYID_INDEX or ARRAYID_[LIST]", s)
	}
	r := jobRef{id: id, tasks: make([]int32, len(spec.Tasks))}
	for i, t := range spec.Tasks { // sorted, without repeats
		r.tasks[i] = int32(t)
	}
	return r, nil
}

// splitJobList splits a list of job IDs at the commas outside brackets.
func splitJobList(s string) []string {
	var out []string
	depth, start := 0, 0
	add := func(end int) {
		if p := strings.TrimSpace(s[start:end]); p != "" {
			out = append(out, p)
		}
	}
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				add(i)
				start = i + 1
			}
		}
	}
	add(len(s))
	return out
}

// refIDs are the distinct job and array IDs of refs, in order.
func refIDs(refs []jobRef) []uint64 {
	var ids []uint64
	for _, r := range refs {
		if !slices.Contains(ids, r.id) {
			ids = append(ids, r.id)
		}
	}
	return ids
}

// lookupRefs lists the jobs refs may name, in one listing: each ID's job,
// every task of an array named by its ID (the controller adds them), in
// the queue or ended within MinJobAge.
func (cn *conn) lookupRefs(ctx context.Context, refs []jobRef) ([]*phalanxv1.Job, error) {
	return cn.listJobs(ctx, &phalanxv1.ListJobsRequest{JobIds: refIDs(refs)})
}

// jobTarget is one job a command acts on, by the name it reports it by.
type jobTarget struct {
	id   uint64 // 0: name names no job
	name string
}

// jobTargets resolves refs to the jobs a command acts on, in order. An
// array's ID stands for its tasks still in the queue that applies
// accepts, or all those in the queue when it accepts none (the controller
// then says why each is refused); an array whose tasks have all ended, and
// an ID the listing does not show, stand for themselves, for the
// controller to answer. Tasks an array does not have (or no longer shows)
// are one target without an ID, named as the user would write them.
func (cn *conn) jobTargets(ctx context.Context, refs []jobRef, applies func(*phalanxv1.Job) bool) ([]jobTarget, error) {
	listed, err := cn.lookupRefs(ctx, refs)
	if err != nil {
		return nil, err
	}
	var out []jobTarget
	for _, r := range refs {
		named, missing := r.pick(listed)
		if r.tasks == nil {
			named = arrayPart(r.id, named, applies)
		}
		for _, j := range named {
			out = append(out, jobTarget{id: j.Id, name: jobName(j)})
		}
		if len(missing) > 0 {
			out = append(out, jobTarget{name: taskSetName(r.id, missing)})
		}
		if r.tasks == nil && len(named) == 0 {
			out = append(out, jobTarget{id: r.id, name: r.String()})
		}
	}
	return out, nil
}

// arrayPart is what job ID id stands for among the jobs named: the job
// when it is no array's ID; else the array's tasks in the queue that
// applies accepts, or all of those when it accepts none.
func arrayPart(id uint64, named []*phalanxv1.Job, applies func(*phalanxv1.Job) bool) []*phalanxv1.Job {
	if len(named) == 1 && named[0].Id == id {
		return named
	}
	var queued, accepted []*phalanxv1.Job
	for _, j := range named {
		if cluster.JobState(j.State).Terminal() {
			continue
		}
		queued = append(queued, j)
		if applies == nil || applies(j) {
			accepted = append(accepted, j)
		}
	}
	if len(accepted) > 0 {
		return accepted
	}
	return queued
}

// jobName is how a job is reported: ARRAYID_INDEX for an array's task,
// else its ID.
func jobName(j *phalanxv1.Job) string {
	if a := j.GetArrayTask(); a != nil {
		return fmt.Sprintf("%d_%d", a.ArrayJobId, a.TaskId)
	}
	return strconv.FormatUint(j.Id, 10)
}

// taskSetName writes tasks of array id as Slurm does: 40_3, 40_[1-3,7].
func taskSetName(id uint64, tasks []int32) string {
	if len(tasks) == 1 {
		return fmt.Sprintf("%d_%d", id, tasks[0])
	}
	return fmt.Sprintf("%d_[%s]", id, indexRanges(tasks))
}

// namedBy keeps the jobs refs name (all of them when refs is empty):
// squeue -j 40_3 and sacct -j 40_3 show task 3 alone of the array's tasks
// the controller answers for ID 40.
func namedBy(refs []jobRef, jobs []*phalanxv1.Job) []*phalanxv1.Job {
	if len(refs) == 0 {
		return jobs
	}
	return slices.DeleteFunc(jobs, func(j *phalanxv1.Job) bool {
		return !slices.ContainsFunc(refs, func(r jobRef) bool { return r.names(j) })
	})
}
