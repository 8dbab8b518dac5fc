package cluster

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// placedJob is a two-node gang job, attempt 0, placed on n1 and n2.
func placedJob(t *testing.T) *Job {
	t.Helper()
	j := &Job{ID: 7, Nodes: 2, GPUsPerNode: 2, State: JobPending, Reason: string(ReasonPriority)}
	alloc := Allocation{Nodes: []NodeAlloc{
		{Node: "n1", GPUs: []int{0, 1}, CPUs: 8, MemoryMB: 1000},
		{Node: "n2", GPUs: []int{2, 3}, CPUs: 8, MemoryMB: 1000},
	}}
	if err := Place(j, alloc, 29500, at(0), PlacedMain); err != nil {
		t.Fatalf("Place: %v", err)
	}
	return j
}

func rep(rank int, st TaskState, code, sig, sec int) TaskReport {
	return TaskReport{JobID: 7, Rank: rank, Node: []string{"n1", "n2"}[rank], State: st, ExitCode: code, ExitSignal: sig, Time: at(sec)}
}

func withMessage(r TaskReport, msg string) TaskReport {
	r.Message = msg
	return r
}

func TestApplyTaskReport(t *testing.T) {
	for _, tc := range []struct {
		name        string
		reports     []TaskReport
		changed     []bool
		state       JobState
		reason      string
		code, sig   int
		tasks       []TaskState
		start, end  time.Time
		live        bool
		mutateFirst func(*Job)
	}{{
		name:    "one task running keeps the job configuring",
		reports: []TaskReport{rep(0, TaskStarting, 0, 0, 1), rep(0, TaskRunning, 0, 0, 2)},
		changed: []bool{true, true},
		state:   JobConfiguring, reason: string(ReasonNone),
		tasks: []TaskState{TaskRunning, TaskAssigned}, start: at(0), live: true,
	}, {
		name:    "all running makes the job running at the last report",
		reports: []TaskReport{rep(1, TaskRunning, 0, 0, 3), rep(0, TaskRunning, 0, 0, 5)},
		changed: []bool{true, true},
		state:   JobRunning, reason: string(ReasonNone),
		tasks: []TaskState{TaskRunning, TaskRunning}, start: at(5), live: true,
	}, {
		name:    "duplicate running is ignored",
		reports: []TaskReport{rep(0, TaskRunning, 0, 0, 1), rep(0, TaskRunning, 0, 0, 2)},
		changed: []bool{true, false},
		state:   JobConfiguring, reason: string(ReasonNone),
		tasks: []TaskState{TaskRunning, TaskAssigned}, start: at(0), live: true,
	}, {
		name: "all exit 0 completes at the latest end time",
		reports: []TaskReport{
			rep(0, TaskRunning, 0, 0, 1), rep(1, TaskRunning, 0, 0, 2),
			rep(1, TaskExited, 0, 0, 20), rep(0, TaskExited, 0, 0, 10), // out of order
		},
		changed: []bool{true, true, true, true},
		state:   JobCompleted, reason: string(ReasonNone),
		tasks: []TaskState{TaskExited, TaskExited}, start: at(2), end: at(20),
	}, {
		name:    "one exit 0 while the peer runs keeps running",
		reports: []TaskReport{rep(0, TaskRunning, 0, 0, 1), rep(1, TaskRunning, 0, 0, 2), rep(0, TaskExited, 0, 0, 9)},
		changed: []bool{true, true, true},
		state:   JobRunning, reason: string(ReasonNone),
		tasks: []TaskState{TaskExited, TaskRunning}, start: at(2), live: true,
	}, {
		name:    "non-zero exit fails the job, peer still holds resources",
		reports: []TaskReport{rep(0, TaskRunning, 0, 0, 1), rep(1, TaskRunning, 0, 0, 2), rep(1, TaskExited, 3, 0, 9)},
		changed: []bool{true, true, true},
		state:   JobFailed, reason: ReasonNonZeroExit, code: 3,
		tasks: []TaskState{TaskRunning, TaskExited}, start: at(2), end: at(9), live: true,
	}, {
		name: "peer killed after failure does not change the outcome",
		reports: []TaskReport{
			rep(0, TaskRunning, 0, 0, 1), rep(1, TaskRunning, 0, 0, 2),
			rep(1, TaskExited, 3, 0, 9), rep(0, TaskKilled, 0, 15, 11),
		},
		changed: []bool{true, true, true, true},
		state:   JobFailed, reason: ReasonNonZeroExit, code: 3,
		tasks: []TaskState{TaskKilled, TaskExited}, start: at(2), end: at(9),
	}, {
		name:    "launch failure fails the job",
		reports: []TaskReport{rep(0, TaskFailed, 0, 0, 4)},
		changed: []bool{true},
		state:   JobFailed, reason: ReasonLaunchFailure,
		tasks: []TaskState{TaskFailed, TaskAssigned}, start: at(0), end: at(4), live: true,
	}, {
		name:    "a launch failure's message is in the reason",
		reports: []TaskReport{withMessage(rep(1, TaskFailed, 0, 0, 4), "prestart-workdir on n2: no such directory")},
		changed: []bool{true},
		state:   JobFailed, reason: ReasonLaunchFailure + ": prestart-workdir on n2: no such directory",
		tasks: []TaskState{TaskAssigned, TaskFailed}, start: at(0), end: at(4), live: true,
	}, {
		// The agent stopped a task of a running job: a system fault, never
		// blamed on the user's code.
		name:    "killed by the agent while running ends NODE_FAIL with the signal",
		reports: []TaskReport{rep(0, TaskRunning, 0, 0, 1), rep(0, TaskKilled, 0, 9, 6)},
		changed: []bool{true, true},
		state:   JobNodeFail, reason: "task stopped by the node agent", sig: 9,
		tasks: []TaskState{TaskKilled, TaskAssigned}, start: at(0), end: at(6), live: true,
	}, {
		name: "a rank that ends before the last one starts still makes the job RUNNING",
		reports: []TaskReport{rep(0, TaskRunning, 0, 0, 1), rep(0, TaskExited, 0, 0, 2),
			rep(1, TaskRunning, 0, 0, 3)},
		changed: []bool{true, true, true},
		state:   JobRunning, reason: string(ReasonNone),
		tasks: []TaskState{TaskExited, TaskRunning}, start: at(3), live: true,
	}, {
		name:    "timeout",
		reports: []TaskReport{rep(0, TaskTimeout, 0, 15, 60), rep(1, TaskTimeout, 0, 15, 61)},
		changed: []bool{true, true},
		state:   JobTimeout, reason: ReasonTimeLimit,
		tasks: []TaskState{TaskTimeout, TaskTimeout}, start: at(0), end: at(60),
	}, {
		name:    "ended task ignores later reports",
		reports: []TaskReport{rep(0, TaskExited, 1, 0, 5), rep(0, TaskRunning, 0, 0, 6), rep(0, TaskExited, 0, 0, 7)},
		changed: []bool{true, false, false},
		state:   JobFailed, reason: ReasonNonZeroExit, code: 1,
		tasks: []TaskState{TaskExited, TaskAssigned}, start: at(0), end: at(5), live: true,
	}, {
		name: "wrong attempt, rank, node and state are ignored",
		reports: []TaskReport{
			{Attempt: 1, Rank: 0, Node: "n1", State: TaskRunning},
			{Rank: 2, Node: "n1", State: TaskRunning},
			{Rank: -1, Node: "n1", State: TaskRunning},
			{Rank: 0, Node: "n2", State: TaskRunning},
			{Rank: 0, Node: "n1", State: TaskAssigned},
			{Rank: 0, Node: "n1", State: "BOGUS"},
		},
		changed: []bool{false, false, false, false, false, false},
		state:   JobConfiguring, reason: string(ReasonNone),
		tasks: []TaskState{TaskAssigned, TaskAssigned}, start: at(0), live: true,
	}, {
		name:        "starting after running is ignored",
		mutateFirst: func(j *Job) { j.Tasks[0].State = TaskRunning },
		reports:     []TaskReport{rep(0, TaskStarting, 0, 0, 1)},
		changed:     []bool{false},
		state:       JobConfiguring, reason: string(ReasonNone),
		tasks: []TaskState{TaskRunning, TaskAssigned}, start: at(0), live: true,
	}, {
		name:        "cancelled job records kills without changing state",
		mutateFirst: func(j *Job) { Cancel(j, at(30), "Cancelled by user") },
		reports:     []TaskReport{rep(0, TaskKilled, 0, 15, 31), rep(1, TaskKilled, 0, 15, 32)},
		changed:     []bool{true, true},
		state:       JobCancelled, reason: "Cancelled by user", sig: SigTerm, // Slurm's 0:15

		tasks: []TaskState{TaskKilled, TaskKilled}, start: at(0), end: at(30),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			j := placedJob(t)
			if tc.mutateFirst != nil {
				tc.mutateFirst(j)
			}
			for i, r := range tc.reports {
				if got := ApplyTaskReport(j, r); got != tc.changed[i] {
					t.Errorf("report %d (%+v): changed = %v; want %v", i, r, got, tc.changed[i])
				}
			}
			if j.State != tc.state || j.Reason != tc.reason {
				t.Errorf("job = %s (%q); want %s (%q)", j.State, j.Reason, tc.state, tc.reason)
			}
			if j.ExitCode != tc.code || j.ExitSignal != tc.sig {
				t.Errorf("exit = %d:%d; want %d:%d", j.ExitCode, j.ExitSignal, tc.code, tc.sig)
			}
			if got := taskStates(j); !reflect.DeepEqual(got, tc.tasks) {
				t.Errorf("tasks = %v; want %v", got, tc.tasks)
			}
			if !j.StartTime.Equal(tc.start) || !j.EndTime.Equal(tc.end) {
				t.Errorf("start, end = %v, %v; want %v, %v", j.StartTime, j.EndTime, tc.start, tc.end)
			}
			if j.Live() != tc.live {
				t.Errorf("Live() = %v; want %v", j.Live(), tc.live)
			}
		})
	}
}

func taskStates(j *Job) []TaskState {
	var out []TaskState
	for _, t := range j.Tasks {
		out = append(out, t.State)
	}
	return out
}

func TestApplyTaskReportKeepsMessage(t *testing.T) {
	j := placedJob(t)
	r := rep(1, TaskFailed, 0, 0, 3)
	r.Message = "pull image: not found"
	ApplyTaskReport(j, r)
	if got := j.Tasks[1]; got.Message != r.Message || !got.EndTime.Equal(at(3)) {
		t.Errorf("task = %+v; want message %q, end %v", got, r.Message, at(3))
	}
}

func TestPlace(t *testing.T) {
	j := placedJob(t)
	if j.State != JobConfiguring || j.Reason != string(ReasonNone) || j.MasterPort != 29500 {
		t.Fatalf("placed job = %s %q port %d", j.State, j.Reason, j.MasterPort)
	}
	want := []Task{{Rank: 0, Node: "n1", State: TaskAssigned}, {Rank: 1, Node: "n2", State: TaskAssigned}}
	if !reflect.DeepEqual(j.Tasks, want) {
		t.Errorf("tasks = %+v; want %+v", j.Tasks, want)
	}
	err := Place(j, *j.Alloc, 1, at(1), PlacedMain)
	if !errors.Is(err, ErrConflict) {
		t.Errorf("Place on a CONFIGURING job = %v; want ErrConflict", err)
	}
	for _, alloc := range []Allocation{{}, {Nodes: []NodeAlloc{{Node: "n1"}}}} {
		p := &Job{ID: 8, Nodes: 2, State: JobPending}
		if err := Place(p, alloc, 1, at(1), PlacedMain); !errors.Is(err, ErrInvalid) || p.State != JobPending {
			t.Errorf("Place with %d nodes = %v, state %s; want ErrInvalid, PENDING", len(alloc.Nodes), err, p.State)
		}
	}
}

// The attempt a placement starts records how the scheduler placed it.
func TestPlaceRecordsHowItWasPlaced(t *testing.T) {
	for _, by := range []PlacedBy{PlacedMain, PlacedBackfill} {
		j := &Job{ID: 1, Nodes: 1, State: JobPending}
		if err := Place(j, Allocation{Nodes: []NodeAlloc{{Node: "n1"}}}, 1, at(0), by); err != nil {
			t.Fatal(err)
		}
		if got := j.Attempts[0].PlacedBy; got != by {
			t.Errorf("attempt placed by %q; want %q", got, by)
		}
	}
}

func TestPlaceCopiesAllocation(t *testing.T) {
	alloc := Allocation{Nodes: []NodeAlloc{{Node: "n1", GPUs: []int{0}}}}
	j := &Job{ID: 1, Nodes: 1, State: JobPending}
	if err := Place(j, alloc, 1, at(0), PlacedMain); err != nil {
		t.Fatal(err)
	}
	alloc.Nodes[0].GPUs[0] = 5
	if j.Alloc.Nodes[0].GPUs[0] != 0 {
		t.Errorf("job shares the caller's allocation")
	}
}

func TestCancel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		job     func(*testing.T) *Job
		changed bool
		state   JobState
		live    bool
	}{
		{"pending", func(*testing.T) *Job { return &Job{State: JobPending} }, true, JobCancelled, false},
		{"configuring", placedJob, true, JobCancelled, true},
		{"running", func(t *testing.T) *Job {
			j := placedJob(t)
			ApplyTaskReport(j, rep(0, TaskRunning, 0, 0, 1))
			ApplyTaskReport(j, rep(1, TaskRunning, 0, 0, 1))
			return j
		}, true, JobCancelled, true},
		{"completed", func(*testing.T) *Job { return &Job{State: JobCompleted, Reason: string(ReasonNone)} }, false, JobCompleted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.job(t)
			if got := Cancel(j, at(9), "Cancelled by user"); got != tc.changed {
				t.Errorf("changed = %v; want %v", got, tc.changed)
			}
			if got := Cancel(j, at(10), "again"); got {
				t.Errorf("second Cancel changed the job")
			}
			if j.State != tc.state || j.Live() != tc.live {
				t.Errorf("state %s live %v; want %s %v", j.State, j.Live(), tc.state, tc.live)
			}
			if tc.changed && (!j.EndTime.Equal(at(9)) || j.Reason != "Cancelled by user") {
				t.Errorf("end %v reason %q; want %v, the cancel reason", j.EndTime, j.Reason, at(9))
			}
			if wantSig := map[bool]int{true: SigTerm}[tc.live && tc.changed]; j.ExitCode != 0 || j.ExitSignal != wantSig {
				t.Errorf("exit %d:%d; want 0:%d (Slurm's 0:15 for a job cancelled while its tasks ran)", j.ExitCode, j.ExitSignal, wantSig)
			}
		})
	}
}

func TestNodeLost(t *testing.T) {
	j := placedJob(t)
	ApplyTaskReport(j, rep(0, TaskRunning, 0, 0, 1))
	if NodeLost(j, "n3", at(5), "Not responding", false) {
		t.Errorf("a node the job is not on changed it")
	}
	if !NodeLost(j, "n2", at(5), "Not responding", false) {
		t.Fatalf("NodeLost on n2 did not change the job")
	}
	if j.State != JobNodeFail || j.Reason != "Not responding" || !j.EndTime.Equal(at(5)) {
		t.Errorf("job = %s %q end %v", j.State, j.Reason, j.EndTime)
	}
	if got := taskStates(j); !reflect.DeepEqual(got, []TaskState{TaskRunning, TaskLost}) {
		t.Errorf("tasks = %v", got)
	}
	if !j.Live() {
		t.Errorf("rank 0 still runs; the job must hold resources")
	}
	if NodeLost(j, "n2", at(6), "again", false) {
		t.Errorf("NodeLost is not idempotent")
	}
	// The surviving task is lost too when its node goes: the job is
	// terminal already, so only the task changes.
	if !NodeLost(j, "n1", at(7), "Not responding", false) || j.Live() || !j.EndTime.Equal(at(5)) {
		t.Errorf("after losing n1: live %v end %v", j.Live(), j.EndTime)
	}
	if NodeLost(&Job{State: JobPending}, "n1", at(1), "x", false) {
		t.Errorf("a pending job changed")
	}
}

func TestUsage(t *testing.T) {
	a := placedJob(t)
	b := &Job{ID: 8, Nodes: 1, State: JobPending}
	if err := Place(b, Allocation{Nodes: []NodeAlloc{{Node: "n1", GPUs: []int{5, 4}, CPUs: 2, MemoryMB: 10}}}, 1, at(0), PlacedMain); err != nil {
		t.Fatal(err)
	}
	done := placedJob(t)
	ApplyTaskReport(done, rep(0, TaskExited, 0, 0, 1))
	ApplyTaskReport(done, rep(1, TaskExited, 0, 0, 1))
	failed := placedJob(t) // failed, but rank 1 still runs: still holds everything
	ApplyTaskReport(failed, rep(0, TaskExited, 1, 0, 1))
	failed.Alloc.Nodes[0].Node, failed.Tasks[0].Node = "n3", "n3"
	whole := &Job{ID: 9, Nodes: 1, State: JobPending, Exclusive: true} // --exclusive, no GPU, no CPU asked
	if err := Place(whole, Allocation{Nodes: []NodeAlloc{{Node: "n4"}}}, 1, at(0), PlacedMain); err != nil {
		t.Fatal(err)
	}

	got := Usage([]*Job{a, b, done, failed, whole, {State: JobPending}})
	want := map[string]NodeUsage{
		"n1": {GPUs: []int{0, 1, 4, 5}, CPUs: 10, MemoryMB: 1010, Jobs: 2},
		"n2": {GPUs: []int{2, 2, 3, 3}, CPUs: 16, MemoryMB: 2000, Jobs: 2, Completing: true}, // the failed job's
		"n3": {GPUs: []int{0, 1}, CPUs: 8, MemoryMB: 1000, Jobs: 1, Completing: true},
		"n4": {Jobs: 1, Exclusive: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Usage = %+v\nwant    %+v", got, want)
	}
	// As sinfo shows them: an exclusive job's node is ALLOCATED, one with a
	// job that holds no GPU or CPU is MIXED, not IDLE; one with a job
	// completing is ALLOCATED+ if full, else COMPLETING (Slurm's flag).
	node := &Node{State: NodeUp, GPUs: 8, CPUs: 64}
	for use, state := range map[*NodeUsage]string{
		{Jobs: 1, Exclusive: true}: "ALLOCATED", {Jobs: 1}: "MIXED", {}: "IDLE",
		{Jobs: 1, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}}: "ALLOCATED",
		{Jobs: 1, Completing: true}:                    "COMPLETING", {Jobs: 1, Exclusive: true, Completing: true}: "ALLOCATED+",
	} {
		if got := use.DisplayState(node); got != state {
			t.Errorf("%+v: %s; want %s", *use, got, state)
		}
	}
}

// Every placement opens an attempt record; it closes, with how the job
// stood, when the last task ends, before a preempted job is requeued.
func TestAttemptRecords(t *testing.T) {
	j := requeueableJob(t)
	if len(j.Attempts) != 1 || j.Attempts[0].Released() || !j.Attempts[0].StartTime.Equal(at(0)) {
		t.Fatalf("after Place: %+v; want one open attempt from second 0", j.Attempts)
	}
	ApplyTaskReport(j, rep(0, TaskRunning, 0, 0, 1))
	ApplyTaskReport(j, rep(1, TaskRunning, 0, 0, 1))
	Preempt(j, at(5), JobAttempt{})
	if j.Attempts[0].Released() {
		t.Fatalf("attempt closed while its tasks still run: %+v", j.Attempts[0])
	}
	ApplyTaskReport(j, rep(0, TaskKilled, 0, 15, 6))
	ApplyTaskReport(j, rep(1, TaskKilled, 0, 15, 8))
	a := j.Attempts[0]
	if a.State != JobPreempted || !a.EndTime.Equal(at(8)) || a.Reason != ReasonPreempted || len(a.Alloc.Nodes) != 2 {
		t.Fatalf("closed attempt = %+v; want PREEMPTED at second 8 on two nodes", a)
	}
	if j.State != JobPending || j.Attempt != 1 {
		t.Fatalf("job after its preempted attempt = %s attempt %d; want PENDING attempt 1", j.State, j.Attempt)
	}
	if err := Place(j, Allocation{Nodes: []NodeAlloc{{Node: "n3"}, {Node: "n4"}}}, 1, at(9), PlacedMain); err != nil {
		t.Fatal(err)
	}
	if len(j.Attempts) != 2 || j.Attempts[1].Attempt != 1 || j.Attempts[1].Released() {
		t.Fatalf("after the second placement: %+v", j.Attempts)
	}
	// Update copies what transitions change: the old value keeps its record.
	old := j
	j = j.Update()
	ApplyTaskReport(j, TaskReport{JobID: 7, Attempt: 1, Rank: 0, Node: "n3", State: TaskFailed, Time: at(10)})
	ApplyTaskReport(j, TaskReport{JobID: 7, Attempt: 1, Rank: 1, Node: "n4", State: TaskKilled, Time: at(11)})
	if !j.Attempts[1].Released() || old.Attempts[1].Released() || old.Tasks[0].State != TaskAssigned {
		t.Errorf("Update shares what transitions change: old %+v / %+v", old.Attempts[1], old.Tasks[0])
	}
}
