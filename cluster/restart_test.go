package cluster

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// attemptReport is rep for the job's current attempt.
func attemptReport(j *Job, rank int, st TaskState, code, sec int) TaskReport {
	r := rep(rank, st, code, 0, sec)
	r.Attempt = j.Attempt
	return r
}

// replace places a requeued job again on n1 and n2.
func replace(t *testing.T, j *Job, sec int) {
	t.Helper()
	alloc := Allocation{Nodes: []NodeAlloc{{Node: "n1", GPUs: []int{0, 1}}, {Node: "n2", GPUs: []int{2, 3}}}}
	if err := Place(j, alloc, 29500, at(sec), PlacedMain); err != nil {
		t.Fatalf("Place attempt %d: %v", j.Attempt, err)
	}
}

func TestRestartAfterANodeFault(t *testing.T) {
	j := placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}
	ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
	ApplyTaskReport(j, withMessage(attemptReport(j, 1, TaskLost, 0, 2), "prolog on n2: exit 1; node drained"))
	if j.State != JobNodeFail {
		t.Fatalf("after rank 1 was lost: %s; want NODE_FAIL until every task ended", j.State)
	}
	ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 3)) // stopped: its gang failed
	if j.State != JobPending || j.Attempt != 1 || !j.Requeued || j.Alloc != nil {
		t.Fatalf("after the attempt ended: %s attempt %d requeued %v", j.State, j.Attempt, j.Requeued)
	}
	if !strings.HasPrefix(j.Reason, "restarted after NODE_FAIL (prolog on n2") {
		t.Errorf("reason %q", j.Reason)
	}
	a := j.Attempts[0]
	if a.Cause != RestartNode || a.FaultNode != "n2" || a.State != JobNodeFail {
		t.Errorf("attempt 0 recorded as %+v", a)
	}
	if got := j.FaultNodes(); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Errorf("the next attempt avoids %v, want [n2]", got)
	}
}

// An agent that shuts down stops its tasks (--stop-tasks-on-exit) and
// reports them LOST: the attempt fails for a node cause and restarts, but
// no node is at fault, so the next attempt may run on the same nodes
// (phx dev stopped and started again must not leave its jobs pending with
// idle nodes, as avoiding every node the agents ran on would).
func TestRestartAfterAnAgentShutdownBlamesNoNode(t *testing.T) {
	j := placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}
	ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
	ApplyTaskReport(j, attemptReport(j, 1, TaskRunning, 0, 1))
	for rank := range 2 {
		r := withMessage(attemptReport(j, rank, TaskLost, 0, 2), "node agent shut down")
		r.AgentShutdown = true
		ApplyTaskReport(j, r)
	}
	if j.State != JobPending || j.Attempt != 1 {
		t.Fatalf("after the agents shut down: %s attempt %d (%s); want PENDING attempt 1", j.State, j.Attempt, j.Reason)
	}
	if a := j.Attempts[0]; a.Cause != RestartNode || a.FaultNode != "" || a.State != JobNodeFail {
		t.Errorf("attempt 0 recorded as %+v; want cause node, no fault node", a)
	}
	if got := j.FaultNodes(); len(got) != 0 {
		t.Errorf("the next attempt avoids %v, want no node", got)
	}
	// AgentShutdown means nothing on another state: a failed launch is
	// still the job's.
	j2 := placedJob(t)
	j2.Restart = RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}
	r := attemptReport(j2, 0, TaskLost, 0, 2)
	ApplyTaskReport(j2, r)
	if a := j2.Attempts[0]; a.FaultNode != r.Node {
		t.Errorf("a LOST report without AgentShutdown: fault node %q, want %q", a.FaultNode, r.Node)
	}
}

// A node declared lost after a silence past its lease, whose agent
// fences its tasks, is at fault as if its agent had said so: nothing of
// the attempt runs there any more, and the job restarts elsewhere.
func TestRestartAfterAFencedNodeLoss(t *testing.T) {
	j := placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}
	ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
	ApplyTaskReport(j, attemptReport(j, 1, TaskRunning, 0, 1))
	if !NodeLost(j, "n2", at(2), "Not responding", true) || j.State != JobNodeFail {
		t.Fatalf("after n2 was lost: %s; want NODE_FAIL", j.State)
	}
	ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 3))
	if j.State != JobPending || j.Attempt != 1 {
		t.Fatalf("after the attempt ended: %s attempt %d (%s); want PENDING attempt 1", j.State, j.Attempt, j.Reason)
	}
	if a := j.Attempts[0]; a.Cause != RestartNode || a.FaultNode != "n2" || a.Unfenced {
		t.Errorf("attempt 0 recorded as %+v", a)
	}
	if got := j.FaultNodes(); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Errorf("the next attempt avoids %v, want [n2]", got)
	}
}

// A task killed at its node's lease's end (Fenced) is no verdict on the
// node: after a majority of the controllers was down, every node's lease
// ended, and the first node to report must not be blamed. The attempt
// fails for a node cause and restarts; a node is at fault only once the
// leader finds it silent past its TTL (NodeLost), even after the fenced
// report ended the attempt.
func TestFencedTasksBlameOnlyTheLostNode(t *testing.T) {
	fenced := func(j *Job, rank, sec int) TaskReport {
		r := withMessage(attemptReport(j, rank, TaskLost, 0, sec), `task "x": killed when the node's lease ended`)
		r.Fenced = true
		return r
	}
	running := func() *Job {
		j := placedJob(t)
		j.Restart = RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}
		ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
		ApplyTaskReport(j, attemptReport(j, 1, TaskRunning, 0, 1))
		return j
	}

	// Both nodes come back: no node at fault.
	j := running()
	ApplyTaskReport(j, fenced(j, 0, 5))
	ApplyTaskReport(j, fenced(j, 1, 6))
	if j.State != JobPending || j.Attempt != 1 {
		t.Fatalf("after both tasks were fenced: %s attempt %d (%s); want PENDING attempt 1", j.State, j.Attempt, j.Reason)
	}
	if a := j.Attempts[0]; a.State != JobNodeFail || a.Cause != RestartNode || a.FaultNode != "" {
		t.Errorf("attempt 0 recorded as %+v; want NODE_FAIL, cause node, no fault node", a)
	}
	if got := j.FaultNodes(); len(got) != 0 {
		t.Errorf("the next attempt avoids %v, want no node", got)
	}

	// n1 reports first; n2 stays silent and is declared lost: n2 is at
	// fault.
	j = running()
	ApplyTaskReport(j, fenced(j, 0, 5))
	if j.State != JobNodeFail || j.Attempts[0].FaultNode != "" {
		t.Fatalf("after n1's fenced report: %s, fault node %q; want NODE_FAIL, none yet", j.State, j.Attempts[0].FaultNode)
	}
	if !NodeLost(j, "n2", at(9), "Not responding", true) {
		t.Fatal("losing n2 changed nothing")
	}
	if j.State != JobPending || j.Attempt != 1 {
		t.Fatalf("after n2 was lost: %s attempt %d (%s); want PENDING attempt 1", j.State, j.Attempt, j.Reason)
	}
	if a := j.Attempts[0]; a.Cause != RestartNode || a.FaultNode != "n2" || a.Reason != "Not responding" {
		t.Errorf("attempt 0 recorded as %+v; want cause node, n2 at fault, for its reason (Not responding)", a)
	}
	if got := j.FaultNodes(); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Errorf("the next attempt avoids %v, want [n2]", got)
	}

	// A node its agent found at fault first stays the one at fault.
	j = running()
	ApplyTaskReport(j, withMessage(attemptReport(j, 1, TaskLost, 0, 5), "gpu-xid: GPU 2 XID 79"))
	NodeLost(j, "n1", at(9), "Not responding", true)
	if a := j.Attempts[0]; a.FaultNode != "n2" {
		t.Errorf("attempt 0's fault node %q; want n2, which its agent found at fault first", a.FaultNode)
	}
}

// A job cancelled while its attempt, ended by a fenced report, waits for
// its other node keeps the cancel's reason when that node is then declared
// lost: it ended because it was cancelled, not for the loss, which only
// the reason of a NODE_FAIL attempt becomes.
func TestCancelAfterAFencedReportKeepsTheCancelsReason(t *testing.T) {
	j := placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}
	ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
	ApplyTaskReport(j, attemptReport(j, 1, TaskRunning, 0, 1))
	r := withMessage(attemptReport(j, 0, TaskLost, 0, 5), `task "x": killed when the node's lease ended`)
	r.Fenced = true
	ApplyTaskReport(j, r)
	if !Cancel(j, at(6), "cancelled by alice") {
		t.Fatal("Cancel changed nothing")
	}
	NodeLost(j, "n2", at(9), "Not responding", true)
	if j.State != JobCancelled || j.Reason != "cancelled by alice" {
		t.Errorf("job %s, reason %q; want CANCELLED, reason %q", j.State, j.Reason, "cancelled by alice")
	}
	if a := j.Attempts[0]; a.State != JobCancelled || a.Reason != "cancelled by alice" {
		t.Errorf("attempt 0 ended %s, reason %q; want CANCELLED, the cancel's reason", a.State, a.Reason)
	}
}

// After a fenced report ended the attempt with no node at fault, the
// other node's agent reports its task LOST with its own verdict on its
// node (a GPU fault): that node is at fault, for that reason, as it would
// be had its report come first. An attempt that ended for another cause
// keeps it: a late verdict only names the node a node cause left unnamed.
func TestAgentVerdictAfterAFencedReportPutsItsNodeAtFault(t *testing.T) {
	running := func() *Job {
		j := placedJob(t)
		j.Restart = RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}
		ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
		ApplyTaskReport(j, attemptReport(j, 1, TaskRunning, 0, 1))
		return j
	}
	j := running()
	r := withMessage(attemptReport(j, 0, TaskLost, 0, 5), `task "x": killed when the node's lease ended`)
	r.Fenced = true
	ApplyTaskReport(j, r)
	ApplyTaskReport(j, withMessage(attemptReport(j, 1, TaskLost, 0, 6), "gpu-xid: GPU 2 XID 79"))
	if j.State != JobPending || j.Attempt != 1 {
		t.Fatalf("after both tasks were lost: %s attempt %d (%s); want PENDING attempt 1", j.State, j.Attempt, j.Reason)
	}
	if a := j.Attempts[0]; a.Cause != RestartNode || a.FaultNode != "n2" || a.Reason != "gpu-xid: GPU 2 XID 79" {
		t.Errorf("attempt 0: cause %s, fault node %q, reason %q; want node, n2, its agent's verdict", a.Cause, a.FaultNode, a.Reason)
	}
	if got := j.FaultNodes(); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Errorf("the next attempt avoids %v, want [n2]", got)
	}

	j = running()
	j.Restart.On = j.Restart.On.With(RestartExit)
	ApplyTaskReport(j, attemptReport(j, 0, TaskExited, 3, 5))
	ApplyTaskReport(j, withMessage(attemptReport(j, 1, TaskLost, 0, 6), "gpu-xid: GPU 2 XID 79"))
	if a := j.Attempts[0]; a.Cause != RestartExit || a.FaultNode != "" || a.Reason != ReasonNonZeroExit {
		t.Errorf("attempt 0 after exit 3, then n2 lost: cause %s, fault node %q, reason %q; want exit, none, %s", a.Cause, a.FaultNode, a.Reason, ReasonNonZeroExit)
	}
}

// A one-node job whose node is lost, fenced: the loss ends its last task,
// and the job restarts then, with no other rank's report to wait for.
func TestRestartAfterTheOnlyNodeIsLost(t *testing.T) {
	j := &Job{ID: 7, Nodes: 1, GPUsPerNode: 2, State: JobPending, Restart: RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}}
	if err := Place(j, Allocation{Nodes: []NodeAlloc{{Node: "n1", GPUs: []int{0, 1}}}}, 29500, at(0), PlacedMain); err != nil {
		t.Fatal(err)
	}
	ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
	if !NodeLost(j, "n1", at(2), "Not responding", true) {
		t.Fatal("losing the job's node changed nothing")
	}
	if j.State != JobPending || j.Attempt != 1 {
		t.Fatalf("after its only node was lost: %s attempt %d (%s); want PENDING attempt 1", j.State, j.Attempt, j.Reason)
	}
	if a := j.Attempts[0]; a.State != JobNodeFail || a.Cause != RestartNode || a.FaultNode != "n1" {
		t.Errorf("attempt 0 recorded as %+v", a)
	}
	// Unfenced (the node may still run it): not restarted.
	k := &Job{ID: 8, Nodes: 1, GPUsPerNode: 2, State: JobPending, Restart: RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}}
	if err := Place(k, Allocation{Nodes: []NodeAlloc{{Node: "n1", GPUs: []int{0, 1}}}}, 29500, at(0), PlacedMain); err != nil {
		t.Fatal(err)
	}
	NodeLost(k, "n1", at(2), "Not responding", false)
	if k.State != JobNodeFail || k.Attempt != 0 {
		t.Errorf("unfenced loss of its node: %s attempt %d; want NODE_FAIL, not restarted", k.State, k.Attempt)
	}
}

func TestNoRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy RestartPolicy
		lose   func(j *Job)
	}{
		{"policy without the cause", RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}, func(j *Job) {
			ApplyTaskReport(j, attemptReport(j, 1, TaskExited, 2, 2)) // the user's failure
			ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 3))
		}},
		{"no restarts allowed", RestartPolicy{}, func(j *Job) {
			ApplyTaskReport(j, attemptReport(j, 1, TaskLost, 0, 2))
			ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 3))
		}},
		// A node the controller declared lost while silent may still run
		// its task: never two attempts at once.
		{"a task declared lost without its agent", RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}, func(j *Job) {
			ApplyTaskReport(j, attemptReport(j, 0, TaskLost, 0, 2)) // by its agent: the node's fault
			NodeLost(j, "n2", at(3), "Not responding", false)
		}},
		{"declared lost first", RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}, func(j *Job) {
			NodeLost(j, "n2", at(2), "Not responding", false)
			ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 3))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := placedJob(t)
			j.Restart = tc.policy
			ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
			ApplyTaskReport(j, attemptReport(j, 1, TaskRunning, 0, 1))
			tc.lose(j)
			if j.State == JobPending || j.Attempt != 0 || j.Live() {
				t.Errorf("restarted: %s attempt %d live %v (%s)", j.State, j.Attempt, j.Live(), j.Reason)
			}
		})
	}
}

// Restarts stop at MaxRestarts, and after SameFailureLimit attempts in a
// row that failed the same way; a node fault in between resets the count.
func TestRestartLimits(t *testing.T) {
	fail := func(t *testing.T, j *Job, code int, sec int) {
		t.Helper()
		if code == 0 {
			ApplyTaskReport(j, attemptReport(j, 1, TaskLost, 0, sec))
		} else {
			ApplyTaskReport(j, attemptReport(j, 1, TaskExited, code, sec))
		}
		ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, sec+1))
	}
	on := DefaultRestartOn.With(RestartExit)

	j := placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 10, On: on}
	fail(t, j, 3, 1)
	replace(t, j, 10)
	fail(t, j, 0, 11) // a node fault between: the count starts again
	for i := 0; i < SameFailureLimit; i++ {
		replace(t, j, 20+10*i)
		fail(t, j, 3, 21+10*i)
	}
	if j.State != JobFailed || j.Attempt != 4 || !strings.Contains(j.Reason, "the same failure 3 times in a row") {
		t.Errorf("after three same failures in a row: %s attempt %d (%s)", j.State, j.Attempt, j.Reason)
	}

	j = placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 2, On: on}
	for i := 0; i < 3; i++ {
		if i > 0 {
			replace(t, j, 10*i)
		}
		fail(t, j, 0, 10*i+1)
	}
	if j.State != JobNodeFail || j.Attempt != 2 {
		t.Errorf("after MaxRestarts: %s attempt %d", j.State, j.Attempt)
	}
}

// With three ranks: one fails by its agent's word, one's node is declared
// lost while silent (its task may run on), the last is stopped: the
// attempt is not restarted.
func TestNoRestartWhileATaskMayRun(t *testing.T) {
	j := &Job{ID: 7, Nodes: 3, State: JobPending, Restart: RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}}
	alloc := Allocation{Nodes: []NodeAlloc{{Node: "n1"}, {Node: "n2"}, {Node: "n3"}}}
	if err := Place(j, alloc, 29500, at(0), PlacedMain); err != nil {
		t.Fatal(err)
	}
	report := func(rank int, node string, st TaskState, sec int) {
		ApplyTaskReport(j, TaskReport{JobID: 7, Rank: rank, Node: node, State: st, Time: at(sec)})
	}
	for i, n := range []string{"n1", "n2", "n3"} {
		report(i, n, TaskRunning, 1)
	}
	report(0, "n1", TaskLost, 2) // by its agent: n1 at fault
	NodeLost(j, "n2", at(3), "Not responding", false)
	report(2, "n3", TaskKilled, 4)
	if j.State != JobNodeFail || j.Attempt != 0 {
		t.Errorf("%s attempt %d (%s); want NODE_FAIL, not restarted", j.State, j.Attempt, j.Reason)
	}
}

func TestParseRestartCauses(t *testing.T) {
	for in, want := range map[string]string{"node": "node", "exit,node": "node,exit", " Exit ": "exit", "none": "none", "NONE": "none", " None ": "none"} {
		got, err := ParseRestartCauses(in)
		if err != nil || got.String() != want {
			t.Errorf("%q: %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := ParseRestartCauses("node,oom"); err == nil || !strings.Contains(err.Error(), `"oom" is not a restart cause`) {
		t.Errorf("oom: %v", err)
	}
	// none is the empty set: alone, never in a list (which it would not
	// change), and the refusal says so rather than that it is no cause.
	for _, in := range []string{"node,none", "none,exit"} {
		if _, err := ParseRestartCauses(in); err == nil || !strings.Contains(err.Error(), "none alone") {
			t.Errorf("%q: %v; want an error saying to give none alone", in, err)
		}
	}
}

// A task its agent stopped as hung fails the attempt with cause hang: the
// job restarts when its policy names hang, and ends FAILED otherwise.
func TestHangRestarts(t *testing.T) {
	for _, tc := range []struct {
		on      RestartCauses
		restart bool
	}{{DefaultRestartOn.With(RestartHang), true}, {DefaultRestartOn, false}} {
		j := placedJob(t)
		j.Restart = RestartPolicy{MaxRestarts: 3, On: tc.on}
		ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
		ApplyTaskReport(j, attemptReport(j, 1, TaskRunning, 0, 1))
		ApplyTaskReport(j, withMessage(attemptReport(j, 1, TaskHung, 143, 2), "no output, no checkpoint and idle GPUs for 30m0s"))
		if a := j.Attempts[0]; a.Cause != RestartHang || a.FaultNode != "" {
			t.Errorf("%s: attempt 0 recorded as %+v", tc.on, a)
		}
		if !strings.HasPrefix(j.Reason, "Hang: no output") {
			t.Errorf("%s: reason %q", tc.on, j.Reason)
		}
		ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 3))
		if restarted := j.State == JobPending && j.Attempt == 1; restarted != tc.restart {
			t.Errorf("restart-on %s: %s attempt %d; restarted %v, want %v", tc.on, j.State, j.Attempt, restarted, tc.restart)
		}
	}
	if on, err := ParseRestartCauses("hang,node"); err != nil || on.String() != "node,hang" {
		t.Errorf("parse hang,node: %v, %v", on, err)
	}
}

// A rank that finds the step to resume from corrupt fails its launch; the
// whole attempt ends and the job restarts whatever causes its policy
// names (here none but node), blaming no node, within MaxRestarts. A
// plain launch failure does not restart.
func TestCorruptCheckpointRestarts(t *testing.T) {
	j := placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 2, On: DefaultRestartOn}
	ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
	corrupt := withMessage(attemptReport(j, 1, TaskFailed, 0, 2), "checkpoint step 40 rank 1: corrupt")
	corrupt.CheckpointCorrupt = true
	ApplyTaskReport(j, corrupt)
	ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 3))
	if j.State != JobPending || j.Attempt != 1 {
		t.Fatalf("after a corrupt checkpoint: %s attempt %d (%s); want PENDING in attempt 1", j.State, j.Attempt, j.Reason)
	}
	if a := j.Attempts[0]; a.Cause != RestartCheckpoint || a.FaultNode != "" {
		t.Errorf("attempt 0 recorded as cause %s, fault node %q; want checkpoint, none", a.Cause, a.FaultNode)
	}
	if got := j.FaultNodes(); len(got) != 0 {
		t.Errorf("the next attempt avoids %v: no node was at fault", got)
	}

	replace(t, j, 4)
	ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 5))
	ApplyTaskReport(j, withMessage(attemptReport(j, 1, TaskFailed, 0, 6), "prestart-workdir on n2: no such directory"))
	ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 7))
	if j.State != JobFailed || j.Attempt != 1 {
		t.Fatalf("after a plain launch failure: %s attempt %d; want FAILED in attempt 1", j.State, j.Attempt)
	}
}

// scontrol requeue: a running job is REQUEUED until its tasks have ended,
// then PENDING in its next attempt, first in its class; the attempt is
// recorded as REQUEUED. A pending or ended job is not requeued.
func TestRequestRequeue(t *testing.T) {
	j := placedJob(t)
	ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
	ApplyTaskReport(j, attemptReport(j, 1, TaskRunning, 0, 1))
	if !RequestRequeue(j, at(2)) || j.State != JobRequeued || !j.InQueue() {
		t.Fatalf("after requeue: %s, in queue %v", j.State, j.InQueue())
	}
	ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 3))
	if j.State != JobRequeued {
		t.Fatalf("one task still running: %s, want REQUEUED", j.State)
	}
	ApplyTaskReport(j, attemptReport(j, 1, TaskKilled, 0, 3))
	if j.State != JobPending || j.Attempt != 1 || !j.Requeued || j.Reason != ReasonRequeued {
		t.Fatalf("after every task ended: %s attempt %d requeued %v reason %q", j.State, j.Attempt, j.Requeued, j.Reason)
	}
	if a := j.Attempts[0]; a.State != JobRequeued {
		t.Errorf("attempt 0 recorded as %s, want REQUEUED", a.State)
	}
	if RequestRequeue(j, at(4)) {
		t.Error("a pending job was requeued")
	}
	if !Cancel(j, at(5), "x") || RequestRequeue(j, at(6)) {
		t.Error("a cancelled job was requeued")
	}
}

// Every requeue uses one of MaxRestarts (docs/recovery.md): a job
// requeued by hand as often as its policy allows restarts is not
// restarted after a node fault.
func TestRequeueUsesARestart(t *testing.T) {
	j := placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 1, On: DefaultRestartOn}
	if !RequestRequeue(j, at(1)) {
		t.Fatal("not requeued")
	}
	ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 2))
	ApplyTaskReport(j, attemptReport(j, 1, TaskKilled, 0, 2))
	replace(t, j, 3)
	ApplyTaskReport(j, withMessage(attemptReport(j, 1, TaskLost, 0, 4), "prolog on n2: exit 1; node drained"))
	ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 5))
	if j.State != JobNodeFail || j.Attempt != 1 {
		t.Errorf("a node fault after a requeue, with --max-restarts=1: %s attempt %d; want NODE_FAIL in attempt 1", j.State, j.Attempt)
	}
}

// scancel --signal requests are numbered in the attempt, at most
// MaxSignalRequests kept, only for a placed job, and forgotten at a
// requeue.
func TestRequestSignal(t *testing.T) {
	j := placedJob(t)
	if RequestSignal(&Job{State: JobPending}, SignalRequest{Signal: 10, Scope: SignalSteps}) {
		t.Error("a pending job was signalled")
	}
	for i := range MaxSignalRequests + 3 {
		if !RequestSignal(j, SignalRequest{Signal: 10 + i%2, Scope: SignalBatch, Step: 7}) {
			t.Fatalf("request %d refused", i)
		}
	}
	rs := j.SignalRequests
	if len(rs) != MaxSignalRequests || rs[0].Seq != 4 || rs[len(rs)-1].Seq != MaxSignalRequests+3 || rs[0].Scope != SignalBatch || rs[0].Step != 0 {
		t.Errorf("requests kept: %+v (a step only with SignalStep)", rs)
	}
	if RequestSignal(j, SignalRequest{Signal: 15, Scope: SignalStep, Step: 2}); j.SignalRequests[len(j.SignalRequests)-1].Step != 2 {
		t.Errorf("a step's request: %+v", j.SignalRequests[len(j.SignalRequests)-1])
	}
	if c := j.Clone(); &c.SignalRequests[0] == &j.SignalRequests[0] {
		t.Error("Clone shares the requests")
	}
	Requeue(j, ReasonPreempted)
	if len(j.SignalRequests) != 0 {
		t.Errorf("a requeued job kept %d requests of its attempt", len(j.SignalRequests))
	}
}

// sbatch --deadline: a pending job whose start now plus its time limit
// passes its deadline ends DEADLINE; one that can still end in time, or
// that runs, is left alone.
func TestMissDeadline(t *testing.T) {
	now := at(0)
	j := &Job{State: JobPending, TimeLimit: time.Hour, Deadline: now.Add(2 * time.Hour)}
	if MissDeadline(j, now) || MissDeadline(j, now.Add(time.Hour)) {
		t.Fatal("a job that can still end by its deadline was ended")
	}
	if !MissDeadline(j, now.Add(time.Hour+time.Second)) || j.State != JobDeadline || j.Reason != ReasonDeadline || !j.State.Terminal() {
		t.Fatalf("past its deadline: %s (%s)", j.State, j.Reason)
	}
	unlimited := &Job{State: JobPending, Deadline: now.Add(24 * time.Hour)}
	if !MissedDeadline(unlimited, now) {
		t.Error("a job with no time limit cannot promise to end by a deadline")
	}
	running := &Job{State: JobRunning, TimeLimit: time.Hour, Deadline: now}
	if MissDeadline(running, now.Add(time.Hour)) {
		t.Error("a running job was ended by its deadline")
	}
	if MissedDeadline(&Job{State: JobPending, TimeLimit: time.Hour}, now) {
		t.Error("a job without a deadline missed it")
	}
	// As in Slurm (checked live), a held job stays held; released, it ends.
	held := &Job{State: JobPending, TimeLimit: time.Hour, Deadline: now, Hold: HoldUser}
	if MissDeadline(held, now.Add(time.Hour)) || held.State != JobPending {
		t.Errorf("a held job was ended by its deadline: %s", held.State)
	}
	held.Hold = HoldNone
	if !MissDeadline(held, now.Add(time.Hour)) {
		t.Error("a released job past its deadline was not ended")
	}
}

// A job to be restarted once the rest of its failed attempt has stopped
// comes back, as one being requeued: a cancel then ends it for good. On
// phx dev, scancel of a 2-node job whose node had just been declared lost
// (COMPLETING while its other task stopped) answered nothing and changed
// nothing, and the job ran again once the task had stopped.
func TestCancelWhileARestartIsPending(t *testing.T) {
	j := placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}
	ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
	ApplyTaskReport(j, attemptReport(j, 1, TaskRunning, 0, 1))
	NodeLost(j, "n2", at(2), "Not responding", true)
	if j.State != JobNodeFail || !j.RestartPending() || !j.Live() {
		t.Fatalf("after n2 was lost: %s, restart pending %v, live %v; want NODE_FAIL, a restart pending, rank 0 stopping", j.State, j.RestartPending(), j.Live())
	}
	if !Cancel(j, at(3), string(ReasonNone)) || j.State != JobCancelled {
		t.Fatalf("cancel while the restart is pending: %s; want CANCELLED", j.State)
	}
	ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 4))
	if j.State != JobCancelled || j.Attempt != 0 || j.Live() {
		t.Errorf("once rank 0 stopped: %s attempt %d live %v; want CANCELLED, not restarted", j.State, j.Attempt, j.Live())
	}
	if a := j.Attempts[0]; a.Cause != RestartNode || a.FaultNode != "n2" || !a.Released() {
		t.Errorf("attempt 0 recorded as %+v; want the node cause and n2 at fault kept", a)
	}

	// A failure that is not restarted has ended: a cancel changes nothing.
	for _, tc := range []struct {
		name   string
		policy RestartPolicy
		fenced bool
	}{
		{"no restarts", RestartPolicy{MaxRestarts: 0, On: DefaultRestartOn}, true},
		{"not a cause it names", RestartPolicy{MaxRestarts: 3, On: RestartCauses(0).With(RestartExit)}, true},
		{"unfenced", RestartPolicy{MaxRestarts: 3, On: DefaultRestartOn}, false},
	} {
		j := placedJob(t)
		j.Restart = tc.policy
		ApplyTaskReport(j, attemptReport(j, 0, TaskRunning, 0, 1))
		ApplyTaskReport(j, attemptReport(j, 1, TaskRunning, 0, 1))
		NodeLost(j, "n2", at(2), "Not responding", tc.fenced)
		if j.RestartPending() || Cancel(j, at(3), string(ReasonNone)) || j.State != JobNodeFail {
			t.Errorf("%s: restart pending %v, state after a cancel %s; want no restart pending, NODE_FAIL kept", tc.name, j.RestartPending(), j.State)
		}
	}

	// The third same failure in a row is not restarted either.
	j = placedJob(t)
	j.Restart = RestartPolicy{MaxRestarts: 10, On: DefaultRestartOn.With(RestartExit)}
	for i := range SameFailureLimit {
		if i > 0 {
			replace(t, j, 10*i)
		}
		ApplyTaskReport(j, attemptReport(j, 1, TaskExited, 3, 10*i+1))
		if i < SameFailureLimit-1 {
			ApplyTaskReport(j, attemptReport(j, 0, TaskKilled, 0, 10*i+2))
		}
	}
	if j.State != JobFailed || !j.Live() || j.RestartPending() {
		t.Errorf("third exit 3 in a row, rank 0 stopping: %s live %v restart pending %v; want FAILED with no restart pending", j.State, j.Live(), j.RestartPending())
	}
}
