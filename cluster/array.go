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

// ParseArray reads --array's value for a cluster whose MaxArraySize is max.
// As Slurm's sbatch, it takes an empty part of the list (1,,3) and a
// throttle of 0 or none (%0, %: no limit).
func ParseArray(s string, max int) (ArraySpec, error) {
	spec, throttle, hasThrottle := strings.Cut(strings.TrimSpace(s), "%")
	var a ArraySpec
	if hasThrottle && throttle != "" {
		n, err := strconv.Atoi(throttle)
		if err != nil || n < 0 {
			return ArraySpec{}, Errorf(ErrInvalid, "Invalid job array specification: %s: %%%s: give the most tasks to run at once (0: no limit)", s, throttle)
		}
		a.Throttle = n
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(spec, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		lo, hi, step, err := parseArrayRange(part)
		if err != nil {
			return ArraySpec{}, Errorf(ErrInvalid, "Invalid job array specification: %v: write N, N-M, N-M:STEP, joined by commas, with %%LIMIT at the end", err)
		}
		if hi >= max {
			return ArraySpec{}, Errorf(ErrInvalid, "Invalid job array specification: %s: index %d is over the cluster's MaxArraySize=%d (the most is %d)", s, hi, max, max-1)
		}
		for i := lo; i <= hi; i += step {
			if !seen[i] {
				seen[i] = true
				a.Tasks = append(a.Tasks, i)
			}
		}
	}
	if len(a.Tasks) == 0 {
		return ArraySpec{}, Errorf(ErrInvalid, "Invalid job array specification: %q has no index: write N, N-M, N-M:STEP, joined by commas, with %%LIMIT at the end", s)
	}
	slices.Sort(a.Tasks)
	return a, nil
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
