package cluster

import (
	"slices"
	"strconv"
	"strings"
)

// Job arrays (sbatch --array, Slurm's syntax and meaning). One submit makes
// one job per index, all in one Raft entry: consecutive job IDs, the first
// of which is the array's ID (SLURM_ARRAY_JOB_ID), each task with its own
// index (SLURM_ARRAY_TASK_ID). The tasks share one stored copy of the
// script and environment. A throttle (%N) lets at most N tasks of the array
// run at once; the others wait with reason JobArrayTaskLimit.
//
//	--array=0-15        indices 0 to 15
//	--array=1,3,7       those three
//	--array=0-31:4      0, 4, 8, ... 28
//	--array=0-99%8      at most 8 running at once
//
// An index is at most MaxArraySize-1 (slurm.conf's MaxArraySize, default
// 1001).

// DefaultMaxArraySize is Slurm's default MaxArraySize.
const DefaultMaxArraySize = 1001

// ReasonArrayTaskLimit is the pending reason of an array task held back by
// its array's throttle (Slurm's).
const ReasonArrayTaskLimit PendingReason = "JobArrayTaskLimit"

// ArraySpec is a parsed --array: its indices, ascending and distinct, and
// its throttle (0: none).
type ArraySpec struct {
	Tasks    []int
	Throttle int
}

// MaxArraySizeCeiling is Slurm's largest MaxArraySize: no array has an
// index above MaxArraySizeCeiling-1 on any cluster.
const MaxArraySizeCeiling = 4000001

// ParseArray reads --array's value for a cluster whose MaxArraySize is max.
// As Slurm's sbatch, it takes an empty part of the list (1,,3) and a
// throttle of 0 or none (%0, %: no limit). The parts may list max indices
// at most, counted before repeats are dropped: the list is expanded only
// then, so that no text of a few bytes makes billions of them.
func ParseArray(s string, max int) (ArraySpec, error) {
	ranges, throttle, err := parseArraySpec(s, max)
	if err != nil {
		return ArraySpec{}, err
	}
	a := ArraySpec{Throttle: throttle}
	for _, r := range ranges {
		for i := r.lo; i <= r.hi; i += r.step {
			a.Tasks = append(a.Tasks, i)
		}
	}
	slices.Sort(a.Tasks)
	a.Tasks = slices.Compact(a.Tasks)
	return a, nil
}

// CheckArray reports what is wrong with --array's value s on a cluster
// whose MaxArraySize is max, as ParseArray does, without listing its
// indices (sbatch's check before it calls the controllers).
func CheckArray(s string, max int) error {
	_, _, err := parseArraySpec(s, max)
	return err
}

// arrayRange is one part of --array: lo to hi, every step.
type arrayRange struct{ lo, hi, step int }

// count is how many indices r lists.
func (r arrayRange) count() int { return (r.hi-r.lo)/r.step + 1 }

// overMax is the error of index hi of s at or over max.
func overMax(s string, hi, max int) error {
	if max == MaxArraySizeCeiling { // sbatch's check, which knows no cluster's
		return Errorf(ErrInvalid, "Invalid job array specification: %s: index %d is over %d, the highest any cluster allows (MaxArraySize is at most %d)", s, hi, max-1, max)
	}
	return Errorf(ErrInvalid, "Invalid job array specification: %s: index %d is over the cluster's MaxArraySize=%d (the most is %d)", s, hi, max, max-1)
}

// parseArraySpec reads --array's parts and throttle, and checks them
// against max.
func parseArraySpec(s string, max int) ([]arrayRange, int, error) {
	spec, throttleText, hasThrottle := strings.Cut(strings.TrimSpace(s), "%")
	throttle := 0
	if hasThrottle && throttleText != "" {
		n, err := strconv.Atoi(throttleText)
		if err != nil || n < 0 {
			return nil, 0, Errorf(ErrInvalid, "Invalid job array specification: %s: %%%s: give the most tasks to run at once (0: no limit)", s, throttleText)
		}
		throttle = n
	}
	var ranges []arrayRange
	listed := 0
	for _, part := range strings.Split(spec, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		lo, hi, step, err := parseArrayRange(part)
		if err != nil {
			return nil, 0, Errorf(ErrInvalid, "Invalid job array specification: %v: write N, N-M, N-M:STEP, joined by commas, with %%LIMIT at the end", err)
		}
		if hi >= max {
			return nil, 0, overMax(s, hi, max)
		}
		r := arrayRange{lo: lo, hi: hi, step: step}
		if listed += r.count(); listed > max {
			return nil, 0, Errorf(ErrInvalid, "Invalid job array specification: %s: its parts list over %d indices, the cluster's MaxArraySize: list each index once", s, max)
		}
		ranges = append(ranges, r)
	}
	if len(ranges) == 0 {
		return nil, 0, Errorf(ErrInvalid, "Invalid job array specification: %q has no index: write N, N-M, N-M:STEP, joined by commas, with %%LIMIT at the end", s)
	}
	return ranges, throttle, nil
}

// parseArrayRange reads N, N-M or N-M:STEP.
func parseArrayRange(s string) (lo, hi, step int, err error) {
	s = strings.TrimSpace(s)
	rng, stepText, hasStep := strings.Cut(s, ":")
	from, to, isRange := strings.Cut(rng, "-")
	num := func(t string) (int, error) {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			return 0, Errorf(ErrInvalid, "%q is not an index", t)
		}
		return n, nil
	}
	if lo, err = num(from); err != nil {
		return
	}
	hi, step = lo, 1
	if isRange {
		if hi, err = num(to); err != nil {
			return
		}
	}
	if hasStep {
		if step, err = num(stepText); err != nil || step < 1 {
			return 0, 0, 0, Errorf(ErrInvalid, "step %q: give 1 or more", stepText)
		}
	}
	if hi < lo {
		return 0, 0, 0, Errorf(ErrInvalid, "%s: the range runs backwards", s)
	}
	return lo, hi, step, nil
}

// ArrayTask is what a job that is a task of an array knows of it.
type ArrayTask struct {
	JobID    JobID // the array's ID: its first task's
	TaskID   int   // this task's index
	Count    int   // how many tasks the array has
	Min, Max int   // its lowest and highest index
	Step     int   // the step between its indices, 1 when they are not evenly spaced
	Throttle int   // the most tasks that run at once; 0: no limit
}

// NewArrayTasks makes the array records of spec's tasks, for an array whose
// ID is base.
func NewArrayTasks(base JobID, spec ArraySpec) []ArrayTask {
	n := len(spec.Tasks)
	if n == 0 {
		return nil
	}
	step := 1
	if n > 1 {
		step = spec.Tasks[1] - spec.Tasks[0]
		for i := 2; i < n; i++ {
			if spec.Tasks[i]-spec.Tasks[i-1] != step {
				step = 1
				break
			}
		}
	}
	out := make([]ArrayTask, n)
	for i, t := range spec.Tasks {
		out[i] = ArrayTask{JobID: base, TaskID: t, Count: n, Min: spec.Tasks[0], Max: spec.Tasks[n-1], Step: step, Throttle: spec.Throttle}
	}
	return out
}

// PayloadID is the job whose stored script and environment j uses: its
// array's, for a task of an array.
func (j *Job) PayloadID() JobID {
	if j.Array != nil {
		return j.Array.JobID
	}
	return j.ID
}

// FormatTaskIDs writes indices as Slurm's squeue does, in ranges, with the
// throttle: "[4-15,20%2]" (brackets when there is more than one index or a
// throttle).
func FormatTaskIDs(ids []int, throttle int) string {
	ids = slices.Sorted(slices.Values(ids))
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, strconv.Itoa(ids[i])+"-"+strconv.Itoa(ids[j]))
		} else {
			parts = append(parts, strconv.Itoa(ids[i]))
		}
		i = j + 1
	}
	s := strings.Join(parts, ",")
	if throttle > 0 {
		s += "%" + strconv.Itoa(throttle)
	}
	if len(ids) > 1 || throttle > 0 {
		s = "[" + s + "]"
	}
	return s
}
