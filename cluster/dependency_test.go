package cluster

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDependency(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Dependency
		out  string // String(); "" means in
	}{
		{in: "afterok:12", want: Dependency{Conds: []DepCond{{Type: DepAfterOK, Job: 12}}}},
		{in: "afterok:12:13,afterany:14", want: Dependency{Conds: []DepCond{{Type: DepAfterOK, Job: 12}, {Type: DepAfterOK, Job: 13}, {Type: DepAfterAny, Job: 14}}}},
		{in: "after:5+10:6", want: Dependency{Conds: []DepCond{{Type: DepAfter, Job: 5, Delay: 10 * time.Minute}, {Type: DepAfter, Job: 6}}}},
		{in: "afternotok:7?singleton", want: Dependency{Any: true, Conds: []DepCond{{Type: DepAfterNotOK, Job: 7}, {Type: DepSingleton}}}},
		{in: "singleton", want: Dependency{Conds: []DepCond{{Type: DepSingleton}}}},
		{in: " aftercorr:3 ", want: Dependency{Conds: []DepCond{{Type: DepAfterCorr, Job: 3}}}, out: "aftercorr:3"},
		// "?" between conditions of one type: any of them, which a
		// grouped afterok:31:30 would turn into all.
		{in: "afterok:31?afterok:30", want: Dependency{Any: true, Conds: []DepCond{{Type: DepAfterOK, Job: 31}, {Type: DepAfterOK, Job: 30}}}},
		{in: "afterok:1:2?afterany:3", want: Dependency{Any: true, Conds: []DepCond{{Type: DepAfterOK, Job: 1}, {Type: DepAfterOK, Job: 2}, {Type: DepAfterAny, Job: 3}}}, out: "afterok:1?afterok:2?afterany:3"},
		// Tasks of arrays, and whole arrays.
		{in: "afterok:84_3", want: Dependency{Conds: []DepCond{{Type: DepAfterOK, Job: 84, OnTask: true, Task: 3}}}},
		{in: "afterany:84_0:90,after:7_2+5", want: Dependency{Conds: []DepCond{{Type: DepAfterAny, Job: 84, OnTask: true}, {Type: DepAfterAny, Job: 90}, {Type: DepAfter, Job: 7, OnTask: true, Task: 2, Delay: 5 * time.Minute}}}},
		{in: "afterok:84_*", want: Dependency{Conds: []DepCond{{Type: DepAfterOK, Job: 84}}}, out: "afterok:84"},
		// As scontrol show job prints it (Show).
		{in: "afterok:12(unfulfilled),afterok:40_*(failed),singleton(unfulfilled)", want: Dependency{Conds: []DepCond{{Type: DepAfterOK, Job: 12}, {Type: DepAfterOK, Job: 40}, {Type: DepSingleton}}}, out: "afterok:12:40,singleton"},
		// Slurm keeps +MIN after any job ID (only after's counts), and
		// reads "," as "?" once there is one.
		{in: "afterok:13+5", want: Dependency{Conds: []DepCond{{Type: DepAfterOK, Job: 13, Delay: 5 * time.Minute}}}},
		{in: "afterok:13,singleton?afterany:13", want: Dependency{Any: true, Conds: []DepCond{{Type: DepAfterOK, Job: 13}, {Type: DepSingleton}, {Type: DepAfterAny, Job: 13}}}, out: "afterok:13?singleton?afterany:13"},
		{in: "", want: Dependency{}},
	} {
		got, err := ParseDependency(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseDependency(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		out := tc.out
		if out == "" {
			out = tc.in
		}
		if got.String() != out {
			t.Errorf("ParseDependency(%q).String() = %q, want %q", tc.in, got.String(), out)
		}
		// sbatch sends String(), which the controller parses again.
		if again, err := ParseDependency(got.String()); err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("ParseDependency(%q) = %+v, %v; want %+v as parsed from %q", got.String(), again, err, got, tc.in)
		}
	}
	for in, want := range map[string]string{
		"afterwards:1":   "not a dependency type",
		"afterok":        "needs job IDs",
		"afterok:":       "needs job IDs",
		"afterok:x":      `"x" is not a job ID`,
		"afterok:0":      `"0" is not a job ID`,
		"afterok:_3":     `"_3" is not a job ID`,
		"afterok:84_x":   `"84_x" is not a task of a job array`,
		"afterok:84_-1":  `"84_-1" is not a task of a job array`,
		"after:1+soon":   "whole minutes",
		"afterok:1+soon": "whole minutes",
		"singleton:4":    "takes no job ID",
		"expand:4":       "heterogeneous",
	} {
		_, err := ParseDependency(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "Job dependency problem: "+in+": ") {
			t.Errorf("ParseDependency(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}

func TestDependencyEval(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	jobs := map[JobID]*Job{
		1: {ID: 1, State: JobPending},
		2: {ID: 2, State: JobRunning, StartTime: now.Add(-5 * time.Minute), Alloc: &Allocation{}, Tasks: []Task{{State: TaskRunning}}},
		3: {ID: 3, State: JobCompleted, StartTime: now.Add(-time.Hour), EndTime: now.Add(-time.Minute)},
		4: {ID: 4, State: JobFailed, StartTime: now.Add(-time.Hour), EndTime: now.Add(-time.Minute), ExitCode: 1},
		5: {ID: 5, State: JobCancelled, EndTime: now.Add(-2 * time.Minute)}, // before it started
		// Failed, one task still ending: not ended yet (it may restart).
		6: {ID: 6, State: JobNodeFail, StartTime: now.Add(-time.Hour), Alloc: &Allocation{}, Tasks: []Task{{State: TaskExited}, {State: TaskRunning}}},
	}
	v := DepView{Job: func(id JobID) (*Job, bool) { j, ok := jobs[id]; return j, ok }}
	self := &Job{ID: 10, Name: "train", User: "alice"}
	for _, tc := range []struct {
		dep  string
		want DepStatus
	}{
		{"afterok:3", DepSatisfied},
		{"afterok:4", DepNever},
		{"afterok:2", DepWaiting},
		{"afterok:6", DepWaiting},
		{"afternotok:4", DepSatisfied},
		{"afternotok:3", DepNever},
		{"afternotok:5", DepSatisfied},
		{"afterany:4:3", DepSatisfied},
		{"afterany:1", DepWaiting},
		{"after:2", DepSatisfied},
		{"after:2+10", DepWaiting},
		{"after:2+5", DepSatisfied},
		{"after:1", DepWaiting},
		{"after:5+1", DepSatisfied},
		{"after:5+3", DepWaiting},
		{"afterok:3+60", DepSatisfied},                // only after's delay counts
		{"afterok:4,afterok:1?afterok:2", DepWaiting}, // all "?"
		{"afterok:4,afterok:3?afterok:2", DepSatisfied},
		{"afterok:99", DepSatisfied}, // purged
		{"afterok:3,afterok:4", DepNever},
		{"afterok:3,afterok:2", DepWaiting},
		{"afterok:4?afterok:2", DepWaiting},
		{"afterok:4?afterok:3", DepSatisfied},
		{"afterok:4?afternotok:3", DepNever},
		{"afterok:3?afterok:4", DepSatisfied},
	} {
		d, err := ParseDependency(tc.dep)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Eval(self, v, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.dep, got, tc.want)
		}
		// As the controller gets it from sbatch: String() parsed again.
		sent, err := ParseDependency(d.String())
		if got := sent.Eval(self, v, now); err != nil || got != tc.want {
			t.Errorf("%s sent as %s: %v (%v), want %v", tc.dep, d.String(), got, err, tc.want)
		}
	}
	single, _ := ParseDependency("singleton")
	busy := v
	busy.Singleton = func(j *Job) bool { return j.Name == "train" && j.User == "alice" }
	if got := single.Eval(self, busy, now); got != DepWaiting {
		t.Errorf("singleton with another job of its name running: %v, want waiting", got)
	}
	if got := single.Eval(self, v, now); got != DepSatisfied {
		t.Errorf("singleton alone: %v, want satisfied", got)
	}
}

// A condition on an array's ID is on all its tasks; aftercorr pairs tasks
// of the same index.
func TestDependencyOnAnArray(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	task := func(id JobID, idx int, st JobState) *Job {
		return &Job{ID: id, State: st, StartTime: now.Add(-time.Hour), EndTime: now.Add(-time.Minute), Array: &ArrayTask{JobID: 50, TaskID: idx, Count: 3}}
	}
	arrays := map[string][]*Job{
		"all ok":     {task(50, 0, JobCompleted), task(51, 1, JobCompleted), task(52, 2, JobCompleted)},
		"one failed": {task(50, 0, JobCompleted), task(51, 1, JobFailed), task(52, 2, JobCompleted)},
		"one runs":   {task(50, 0, JobCompleted), task(51, 1, JobFailed), {ID: 52, State: JobRunning, Alloc: &Allocation{}, Tasks: []Task{{State: TaskRunning}}, Array: &ArrayTask{JobID: 50, TaskID: 2}}},
	}
	for name, tasks := range arrays {
		v := DepView{
			Job:        func(id JobID) (*Job, bool) { return tasks[id-50], id >= 50 && id <= 52 },
			ArrayTasks: func(id JobID) []*Job { return tasks },
		}
		mine := &Job{ID: 60, Array: &ArrayTask{JobID: 60, TaskID: 1}}
		for dep, want := range map[string]map[string]DepStatus{
			// Slurm waits for every task, even once one failed.
			"afterok:50":    {"all ok": DepSatisfied, "one failed": DepNever, "one runs": DepWaiting},
			"afterany:50":   {"all ok": DepSatisfied, "one failed": DepSatisfied, "one runs": DepWaiting},
			"afternotok:50": {"all ok": DepNever, "one failed": DepSatisfied, "one runs": DepWaiting},
			"aftercorr:50":  {"all ok": DepSatisfied, "one failed": DepNever, "one runs": DepNever},
			"afterok:52":    {"all ok": DepSatisfied, "one failed": DepSatisfied, "one runs": DepWaiting},
		} {
			d, _ := ParseDependency(dep)
			if got := d.Eval(mine, v, now); got != want[name] {
				t.Errorf("%s on an array where %s: %v, want %v", dep, name, got, want[name])
			}
		}
	}
}

// Show writes each condition not yet fulfilled with its state, as Slurm's
// scontrol show job and squeue %E do, and nothing once the dependency is
// satisfied; arrays are ARRAYID_*, their tasks ARRAYID_TASKID.
func TestDependencyShow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	running := func(id JobID, a *ArrayTask) *Job {
		return &Job{ID: id, State: JobRunning, StartTime: now.Add(-5 * time.Minute), Alloc: &Allocation{}, Tasks: []Task{{State: TaskRunning}}, Array: a}
	}
	ended := func(id JobID, st JobState, a *ArrayTask) *Job {
		return &Job{ID: id, State: st, StartTime: now.Add(-time.Hour), EndTime: now.Add(-time.Minute), Array: a}
	}
	jobs := map[JobID]*Job{
		3: ended(3, JobCompleted, nil), 4: ended(4, JobFailed, nil), 30: running(30, nil), 31: running(31, nil),
		50: ended(50, JobCompleted, &ArrayTask{JobID: 50, TaskID: 0, Count: 3}),
		51: ended(51, JobFailed, &ArrayTask{JobID: 50, TaskID: 1, Count: 3}),
		52: running(52, &ArrayTask{JobID: 50, TaskID: 2, Count: 3}),
	}
	v := DepView{
		Job:        func(id JobID) (*Job, bool) { j, ok := jobs[id]; return j, ok },
		ArrayTasks: func(id JobID) []*Job { return []*Job{jobs[50], jobs[51], jobs[52]} },
		Singleton:  func(*Job) bool { return true },
	}
	self := &Job{ID: 60, Name: "post", User: "alice"}
	for dep, want := range map[string]string{
		"afterany:30:31":          "afterany:30(unfulfilled),afterany:31(unfulfilled)",
		"afterok:31?afterok:4":    "afterok:31(unfulfilled)?afterok:4(failed)",
		"afterok:4,afterany:30":   "afterok:4(failed),afterany:30(unfulfilled)",
		"afterok:3,afterany:30":   "afterany:30(unfulfilled)", // a fulfilled one is not shown
		"afterok:3?afterany:30":   "",
		"afterok:3":               "",
		"afterok:99,after:30+10":  "after:30+10(unfulfilled)", // 99: purged
		"afterany:50":             "afterany:50_*(unfulfilled)",
		"afterok:50":              "afterok:50_*(unfulfilled)", // 50_1 failed, 50_2 runs
		"afterok:3+5,afterok:30":  "afterok:30(unfulfilled)",
		"afterok:30+5":            "afterok:30+5(unfulfilled)",
		"afterok:51?afterok:52":   "afterok:50_1(failed)?afterok:50_2(unfulfilled)",
		"singleton,afternotok:31": "singleton(unfulfilled),afternotok:31(unfulfilled)",
	} {
		d, err := ParseDependency(dep)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Show(self, v, now); got != want {
			t.Errorf("%s: shown %q, want %q", dep, got, want)
		}
		if again, err := ParseDependency(want); err != nil || (want != "" && again.Any != d.Any) {
			t.Errorf("%s: %q does not parse back: %v", dep, want, err)
		}
	}
}
