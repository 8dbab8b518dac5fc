package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Dependencies (sbatch --dependency, Slurm's syntax and meaning). A pending
// job with a dependency is not scheduled until it is satisfied:
//
//	after:ID[+MIN][:ID[+MIN]...]  each job has started, or was cancelled,
//	                              MIN minutes ago (default 0)
//	afterany:ID[:ID...]           each job has ended, however
//	afterok:ID[:ID...]            each job has completed (exit code 0)
//	afternotok:ID[:ID...]         each job has ended some other way (failed,
//	                              timed out, node failure, cancelled...)
//	aftercorr:ID[:ID...]          for a task of an array on another array:
//	                              that array's task of the same index
//	                              completed (none: satisfied); otherwise as
//	                              afterok
//	singleton                     no other job of the same name and user
//	                              runs, nor waits with a lower ID
//
// Conditions are joined by "," (all must hold) or "?" (one is enough); a
// single "?" makes every separator one, as Slurm reads it
// (afterok:1,singleton?afterany:3: any of the three), and decides for the
// conditions that share a type (afterok:1:2?afterany:3) too. Slurm takes
// +MIN after any job ID and shows it, but counts it for after alone: so
// does Phalanx. A condition that can
// no longer hold (afterok on a job that failed) makes the dependency never
// satisfied when all were needed, or when no "?" one is left to hold. The
// job then waits with reason DependencyNeverSatisfied, or is cancelled
// when it asked for that (--kill-on-invalid-dep=yes). A job no longer
// known (purged from the history) satisfies its conditions, as in Slurm.
//
// A job is named by its ID; a task of a job array by ARRAYID_TASKID, which
// the controller resolves to the task's own job ID before it stores the
// dependency (ResolveTask); the array's ID (its first task's), or
// ARRAYID_*, is all its tasks, as in Slurm: afterok holds once every task
// completed, afternotok once every task ended and one did not complete.
// Either waits until every task has ended, even once a task that failed
// has settled it: only then is afterok never satisfied, as in Slurm.

// DepType is the kind of one dependency condition.
type DepType uint8

// Dependency condition kinds.
const (
	DepAfter DepType = iota + 1
	DepAfterAny
	DepAfterOK
	DepAfterNotOK
	DepAfterCorr
	DepSingleton
)

var depTypeNames = map[DepType]string{
	DepAfter: "after", DepAfterAny: "afterany", DepAfterOK: "afterok",
	DepAfterNotOK: "afternotok", DepAfterCorr: "aftercorr", DepSingleton: "singleton",
}

func (t DepType) String() string {
	if n, ok := depTypeNames[t]; ok {
		return n
	}
	return "unknown"
}

// DepCond is one condition: on Job (none for singleton), Delay after it
// started (after only). OnTask says that the condition names task Task of
// the array whose ID is Job (ARRAYID_TASKID): set by ParseDependency, it
// lasts until the controller resolves the task to its own job ID
// (ResolveTask), which is all that is stored, but for the array's first
// task: its job ID is the array's, which alone stands for every task, so
// FirstTask says the condition is on that task alone (Task, its index).
type DepCond struct {
	Type      DepType
	Job       JobID
	Delay     time.Duration
	OnTask    bool
	FirstTask bool
	Task      int
}

// ResolveTask makes a condition on a task of an array one on the task's
// own job, id: FirstTask when that is the array's first (its ID is the
// array's).
func (c *DepCond) ResolveTask(id JobID) {
	first := c.Job == id
	c.Job, c.OnTask, c.FirstTask = id, false, first
	if !first {
		c.Task = 0
	}
}

// Dependency is a job's --dependency: its conditions, all needed unless
// Any.
type Dependency struct {
	Conds []DepCond
	Any   bool
}

// IsZero reports whether there is no dependency.
func (d Dependency) IsZero() bool { return len(d.Conds) == 0 }

// Jobs lists the jobs the conditions name, once each, ascending (for a
// task of an array not yet resolved, the array's ID).
func (d Dependency) Jobs() []JobID {
	var ids []JobID
	for _, c := range d.Conds {
		if c.Type != DepSingleton && !slices.Contains(ids, c.Job) {
			ids = append(ids, c.Job)
		}
	}
	slices.Sort(ids)
	return ids
}

// MaxDepConds bounds a dependency's conditions.
const MaxDepConds = 1000

// ParseDependency reads --dependency's value; "" is no dependency. Its
// errors start as Slurm's do ("Job dependency problem"), then say what.
func ParseDependency(value string) (Dependency, error) {
	s := strings.TrimSpace(value)
	if s == "" {
		return Dependency{}, nil
	}
	var d Dependency
	sep := ","
	if strings.Contains(s, "?") { // then "," is "?" too, as in Slurm
		sep, d.Any = "?", true
		s = strings.ReplaceAll(s, ",", "?")
	}
	for _, part := range strings.Split(s, sep) {
		conds, err := parseDepPart(part)
		if err != nil {
			return Dependency{}, Errorf(ErrInvalid, "Job dependency problem: %s: %v", strings.TrimSpace(value), err)
		}
		d.Conds = append(d.Conds, conds...)
	}
	if len(d.Conds) > MaxDepConds {
		return Dependency{}, Errorf(ErrInvalid, "Job dependency problem: %d conditions, at most %d", len(d.Conds), MaxDepConds)
	}
	return d, nil
}

// parseDepPart reads one TYPE:ID[+MIN][:ID[+MIN]...], or singleton.
func parseDepPart(part string) ([]DepCond, error) {
	name, ids, hasIDs := strings.Cut(strings.TrimSpace(part), ":")
	if !hasIDs {
		name = cutDepState(name) // singleton(unfulfilled), as Slurm shows it
	}
	var typ DepType
	for t, n := range depTypeNames {
		if n == name {
			typ = t
		}
	}
	switch {
	case typ == 0 && name == "expand":
		return nil, Errorf(ErrInvalid, "expand (heterogeneous jobs) is not supported by Phalanx")
	case typ == 0:
		return nil, Errorf(ErrInvalid, "%q is not a dependency type: use after, afterany, afterok, afternotok, aftercorr or singleton", name)
	case typ == DepSingleton && hasIDs:
		return nil, Errorf(ErrInvalid, "singleton takes no job ID")
	case typ == DepSingleton:
		return []DepCond{{Type: DepSingleton}}, nil
	case !hasIDs || ids == "":
		return nil, Errorf(ErrInvalid, "%s needs job IDs: %s:ID[:ID...]", name, name)
	}
	var out []DepCond
	for _, f := range strings.Split(ids, ":") {
		c, err := parseDepJob(typ, f)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// parseDepJob reads one job of a condition of type typ: ID, ARRAYID_TASKID
// or ARRAYID_* (the whole array, as ID alone), then +MIN for after, then
// the state Slurm shows, (unfulfilled) or (failed), which is ignored: the
// controller evaluates every condition again. +MIN is kept for any type,
// as Slurm keeps it; only after's delays the job (evalOnJob).
func parseDepJob(typ DepType, f string) (DepCond, error) {
	ref, delay, hasDelay := strings.Cut(cutDepState(f), "+")
	idText, task, hasTask := strings.Cut(ref, "_")
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil || id == 0 {
		return DepCond{}, Errorf(ErrInvalid, "%q is not a job ID: give ID, or ARRAYID_TASKID for a task of an array", ref)
	}
	c := DepCond{Type: typ, Job: JobID(id)}
	if hasTask && task != "*" {
		n, err := strconv.ParseUint(task, 10, 31)
		if err != nil {
			return DepCond{}, Errorf(ErrInvalid, "%q is not a task of a job array: give ARRAYID_TASKID, or ARRAYID_* for all its tasks", ref)
		}
		c.OnTask, c.Task = true, int(n)
	}
	if hasDelay {
		m, err := strconv.ParseUint(delay, 10, 32)
		if err != nil {
			return DepCond{}, Errorf(ErrInvalid, "+%s: give the delay in whole minutes", delay)
		}
		c.Delay = time.Duration(m) * time.Minute
	}
	return c, nil
}

// cutDepState removes the state Slurm shows after a condition, if any.
func cutDepState(s string) string {
	for _, st := range []string{"(unfulfilled)", "(failed)", "(fulfilled)"} {
		if t, ok := strings.CutSuffix(s, st); ok {
			return t
		}
	}
	return s
}

// String writes the dependency in Slurm's syntax. When all conditions are
// needed, those of one type on consecutive jobs are grouped as sbatch
// takes them (afterok:12:13); "?" is written between every two, since a
// dependency of one group would lose its "?" and need them all.
func (d Dependency) String() string {
	sep := ","
	if d.Any {
		sep = "?"
	}
	var b strings.Builder
	for i, c := range d.Conds {
		switch {
		case i > 0 && !d.Any && c.Type == d.Conds[i-1].Type && c.Type != DepSingleton:
			b.WriteByte(':')
		case i > 0:
			b.WriteString(sep)
			fallthrough
		default:
			b.WriteString(c.Type.String())
			if c.Type != DepSingleton {
				b.WriteByte(':')
			}
		}
		if c.Type != DepSingleton {
			b.WriteString(c.ref() + c.delay())
		}
	}
	return b.String()
}

// ref is the condition's job as given: ID, or ARRAYID_TASKID.
func (c DepCond) ref() string {
	id := strconv.FormatUint(uint64(c.Job), 10)
	if c.OnTask || c.FirstTask {
		return id + "_" + strconv.Itoa(c.Task)
	}
	return id
}

// delay is the condition's +MIN, or "".
func (c DepCond) delay() string {
	if c.Delay <= 0 {
		return ""
	}
	return "+" + strconv.FormatInt(int64(c.Delay/time.Minute), 10)
}

// depStateNames are the states Slurm shows after a condition.
var depStateNames = map[DepStatus]string{DepWaiting: "(unfulfilled)", DepNever: "(failed)"}

// Show writes the dependency as Slurm shows it on a pending job (scontrol
// show job, squeue %E): each condition not yet fulfilled followed by its
// state, (unfulfilled) or (failed), joined by "," or "?", as in
//
//	afterany:30(unfulfilled),afterany:31(unfulfilled)
//	afterok:31(failed)?afterok:84_*(unfulfilled)
//
// where a condition on a whole array names it ARRAYID_*, one on a task
// ARRAYID_TASKID. Once the dependency is satisfied it is "": Slurm forgets
// it then.
func (d Dependency) Show(j *Job, v DepView, now time.Time) string {
	if d.Eval(j, v, now) == DepSatisfied {
		return ""
	}
	sep := ","
	if d.Any {
		sep = "?"
	}
	var parts []string
	for _, c := range d.Conds {
		if st := evalCond(c, j, v, now); st != DepSatisfied {
			parts = append(parts, c.shown(v)+depStateNames[st])
		}
	}
	return strings.Join(parts, sep)
}

// shown is the condition as Show writes it, without its state.
func (c DepCond) shown(v DepView) string {
	if c.Type == DepSingleton {
		return c.Type.String()
	}
	ref := c.ref()
	if o, ok := v.Job(c.Job); ok && o.Array != nil && !c.OnTask && !c.FirstTask {
		ref = fmt.Sprintf("%d_%d", o.Array.JobID, o.Array.TaskID)
		if o.Array.JobID == o.ID {
			ref = fmt.Sprintf("%d_*", o.ID)
		}
	}
	return c.Type.String() + ":" + ref + c.delay()
}

// DepStatus is where a dependency stands.
type DepStatus uint8

// Dependency states.
const (
	DepSatisfied DepStatus = iota // the job may be scheduled
	DepWaiting                    // not yet
	DepNever                      // it can no longer be satisfied
)

// Pending reasons of jobs waiting on a dependency (Slurm's).
const (
	ReasonDependency      PendingReason = "Dependency"
	ReasonDependencyNever PendingReason = "DependencyNeverSatisfied"
)

// DepView is what evaluating a dependency reads of the other jobs.
type DepView struct {
	// Job returns the job with id, active or finished; ok false when
	// there is none (never was, or purged).
	Job func(id JobID) (j *Job, ok bool)
	// ArrayTasks returns the tasks of the job array whose ID is id, active
	// or finished; nil when id is not an array's.
	ArrayTasks func(id JobID) []*Job
	// Singleton reports whether another job of j's name and user runs, or
	// waits with a lower ID.
	Singleton func(j *Job) bool
}

// Eval says where j's dependency stands at now: satisfied, waiting, or
// never to be satisfied.
func (d Dependency) Eval(j *Job, v DepView, now time.Time) DepStatus {
	if d.IsZero() {
		return DepSatisfied
	}
	never := 0
	for _, c := range d.Conds {
		switch evalCond(c, j, v, now) {
		case DepSatisfied:
			if d.Any {
				return DepSatisfied
			}
		case DepNever:
			if !d.Any {
				return DepNever
			}
			never++
		case DepWaiting:
			if !d.Any {
				return DepWaiting
			}
		}
	}
	switch {
	case !d.Any:
		return DepSatisfied
	case never == len(d.Conds):
		return DepNever
	}
	return DepWaiting
}

func evalCond(c DepCond, j *Job, v DepView, now time.Time) DepStatus {
	if c.Type == DepSingleton {
		if v.Singleton != nil && v.Singleton(j) {
			return DepWaiting
		}
		return DepSatisfied
	}
	other, ok := v.Job(c.Job)
	if !ok {
		return DepSatisfied // purged: Slurm lifts the condition
	}
	if a := other.Array; a != nil && a.JobID == other.ID && !c.FirstTask && v.ArrayTasks != nil {
		return evalOnArray(c, j, v.ArrayTasks(other.ID), now)
	}
	return evalOnJob(c, other, now)
}

// evalOnArray is a condition on every task of an array (aftercorr: on the
// task of j's index). It waits while a task has not ended, whatever the
// others did, as Slurm's does.
func evalOnArray(c DepCond, j *Job, tasks []*Job, now time.Time) DepStatus {
	if c.Type == DepAfterCorr && j.Array != nil {
		for _, t := range tasks {
			if t.Array != nil && t.Array.TaskID == j.Array.TaskID {
				return evalOnJob(c, t, now)
			}
		}
		return DepSatisfied // no task of that index
	}
	waiting, satisfied, never := false, false, false
	for _, t := range tasks {
		switch evalOnJob(c, t, now) {
		case DepWaiting:
			waiting = true
		case DepSatisfied:
			satisfied = true
		case DepNever:
			never = true
		}
	}
	switch {
	case waiting:
		return DepWaiting
	case c.Type == DepAfterNotOK && !satisfied: // every task completed
		return DepNever
	case c.Type != DepAfterNotOK && never: // one that never held fails the array
		return DepNever
	}
	return DepSatisfied
}

// evalOnJob is a condition on one job.
func evalOnJob(c DepCond, other *Job, now time.Time) DepStatus {
	// Ended once no task of it runs: a failed job whose policy restarts it
	// is PENDING again by then.
	ended := other.State.Terminal() && !other.Live()
	ok0 := other.State == JobCompleted
	switch c.Type {
	case DepAfter:
		var from time.Time
		switch {
		case other.State == JobCancelled && other.StartTime.IsZero():
			from = other.EndTime
		case other.State != JobPending && !other.StartTime.IsZero():
			from = other.StartTime
		default:
			return DepWaiting
		}
		if now.Before(from.Add(c.Delay)) {
			return DepWaiting
		}
		return DepSatisfied
	case DepAfterAny:
		if ended {
			return DepSatisfied
		}
	case DepAfterOK, DepAfterCorr:
		switch {
		case ended && ok0:
			return DepSatisfied
		case ended:
			return DepNever
		}
	case DepAfterNotOK:
		switch {
		case ended && !ok0:
			return DepSatisfied
		case ended:
			return DepNever
		}
	}
	return DepWaiting
}
