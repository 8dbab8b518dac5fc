package cluster

import (
	"fmt"
	"slices"
	"strings"
)

// Restarts. A job whose attempt failed for a cause its RestartPolicy
// names is requeued (Requeue: same ID, next attempt, first in its
// priority class) once every task of the attempt has ended, up to
// MaxRestarts times, and its next attempt avoids the nodes found at
// fault. Only a cause the job's own agents confirmed restarts it:
//
//   - RestartNode: an agent found its node at fault and ended the task
//     (a failed pre-start check, a GPU or link verdict: the task was
//     reported LOST by its agent);
//   - RestartExit: a task exited non-zero (the user's failure);
//   - RestartHang: a task's agent found it making no progress for the
//     job's hang timeout and stopped it (hang.go);
//   - RestartCheckpoint: a rank found its copy of the checkpoint step the
//     attempt was to resume from corrupt, and marked it so in the store.
//     Its other ranks may have started from that step already, so the
//     whole attempt ends and the next resumes from an earlier step, which
//     every rank then agrees on. It restarts whatever the policy's causes,
//     within MaxRestarts: the attempt only exists because an earlier one
//     was restarted, and each such restart passes over one more step.
//
// A node the controller declares lost while it is silent (NodeLost) is at
// fault too (RestartNode) when it fences: its tasks stopped when its lease
// ended, before the controller's verdict (controller/lease.go). So is one
// an administrator set DOWN that fences (NodeDowned): its attempt restarts
// once its tasks there were reported ended, or fenced. One that does not
// fence may still run its tasks: its attempt is unfenced and never
// restarted, since two attempts must never run at once. A task its agent
// reports fenced (TaskReport.Fenced: killed at its lease's end) fails the
// attempt for RestartNode with no node at fault (the leader sets it only
// for a fence in its grace after an election; one while it answered all
// along is a plain LOST, the node's fault): the lease ends when no
// controller answers, and after a majority of the controllers was down
// every node's has; the node that stays silent past the leader's grace is
// the one at fault (NodeLost), even when a fenced report came first, and
// so is one whose agent then reports a task LOST for a fault it found
// there (lateVerdict).
//
// Three attempts in a row that ended with the same user failure (the same
// exit code or signal), with no node fault in between, end the job FAILED
// whatever restarts remain: restarting a deterministic failure only burns
// GPU-hours.

// RestartCause is why an attempt ended, as far as restarts care.
type RestartCause uint8

// Restart causes.
const (
	RestartNone       RestartCause = iota // not a restartable failure
	RestartNode                           // the node was at fault, by its agent's word
	RestartExit                           // a task exited non-zero
	RestartHang                           // a task made no progress for the job's hang timeout
	RestartCheckpoint                     // the step to resume from was corrupt
)

// AllRestartCauses lists the causes a policy names (--restart-on), in the
// order their names are printed. RestartCheckpoint is not among them: it
// restarts whatever the policy names.
var AllRestartCauses = []RestartCause{RestartNode, RestartExit, RestartHang}

var restartCauseNames = map[RestartCause]string{RestartNode: "node", RestartExit: "exit", RestartHang: "hang", RestartCheckpoint: "checkpoint"}

func (c RestartCause) String() string {
	if n, ok := restartCauseNames[c]; ok {
		return n
	}
	return "none"
}

// RestartCauses is a set of causes.
type RestartCauses uint8

// Has reports whether c is in the set.
func (s RestartCauses) Has(c RestartCause) bool { return c != RestartNone && s&(1<<c) != 0 }

// With returns the set with c added.
func (s RestartCauses) With(c RestartCause) RestartCauses { return s | 1<<c }

func (s RestartCauses) String() string {
	var names []string
	for _, c := range AllRestartCauses {
		if s.Has(c) {
			names = append(names, c.String())
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// ParseRestartCauses reads --restart-on's list: node, exit, hang,
// separated by commas, in any case; "none", alone, for the empty set.
func ParseRestartCauses(s string) (RestartCauses, error) {
	var out RestartCauses
	if strings.EqualFold(strings.TrimSpace(s), "none") {
		return 0, nil
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ToLower(f))
		i := slices.IndexFunc(AllRestartCauses, func(c RestartCause) bool { return c.String() == f })
		if f == "none" {
			return 0, Errorf(ErrInvalid, "none means no cause: give none alone, or node, exit, hang separated by commas")
		}
		if i < 0 {
			return 0, Errorf(ErrInvalid, "%q is not a restart cause: use node, exit, hang, or none, separated by commas", f)
		}
		out = out.With(AllRestartCauses[i])
	}
	return out, nil
}

// RestartPolicy is when a failed job is started again. The zero value
// never restarts (jobs submitted before restarts existed keep it).
type RestartPolicy struct {
	MaxRestarts int // restarts allowed, 0..MaxRestartsLimit
	On          RestartCauses
}

// Restart policy defaults and bounds: Slurm requeues a batch job after a
// node failure by default (JobRequeue=1), and so does Phalanx, three
// times.
const (
	DefaultMaxRestarts = 3
	MaxRestartsLimit   = 128
	// SameFailureLimit attempts in a row failing the same way end the job.
	SameFailureLimit = 3
)

// DefaultRestartOn is the causes a job restarts for unless it says
// otherwise: its node's faults, not its own.
var DefaultRestartOn = RestartCauses(0).With(RestartNode)

// Validate says what is wrong with p.
func (p RestartPolicy) Validate() error {
	if p.MaxRestarts < 0 || p.MaxRestarts > MaxRestartsLimit {
		return Errorf(ErrInvalid, "--max-restarts=%d: give 0 to %d", p.MaxRestarts, MaxRestartsLimit)
	}
	return nil
}

// blame records, on the job's current attempt, why it failed and which
// node was at fault ("" for the user's failures, for an agent that shut
// down, and for tasks fenced at their lease's end). The first cause
// stays; a node cause that named no node takes the first node found at
// fault after it (its agent's verdict, or its loss): after a majority of
// the controllers was down, the healthy nodes' fenced tasks end the
// attempt first, and the node lost meanwhile is the one to avoid. It
// reports whether it filled in such a node: the attempt then failed for
// that node's reason.
func blame(j *Job, cause RestartCause, node string) (filled bool) {
	if len(j.Attempts) == 0 {
		return false
	}
	a := &j.Attempts[len(j.Attempts)-1]
	if a.Attempt != j.Attempt {
		return false
	}
	switch {
	case a.Cause == RestartNone:
		a.Cause, a.FaultNode = cause, node
	case a.Cause == RestartNode && cause == RestartNode && a.FaultNode == "" && node != "" && !a.Released():
		a.FaultNode = node
		return true
	}
	return false
}

// unfenced marks the job's current attempt as one a task of which was
// declared lost without its agent's word: it is never restarted.
func unfenced(j *Job) {
	if len(j.Attempts) > 0 && j.Attempts[len(j.Attempts)-1].Attempt == j.Attempt {
		j.Attempts[len(j.Attempts)-1].Unfenced = true
	}
}

// restartIfFailed requeues a job whose attempt failed for a cause its
// policy names, once the attempt has given its resources back.
func restartIfFailed(j *Job) {
	if j.Live() || (j.State != JobNodeFail && j.State != JobFailed) || len(j.Attempts) == 0 {
		return
	}
	last := j.Attempts[len(j.Attempts)-1]
	if last.Attempt != j.Attempt || !last.Released() || !policyRestarts(j, last) {
		return
	}
	if sameFailures(j, last) >= SameFailureLimit {
		j.Reason = fmt.Sprintf("%s; the same failure %d times in a row: not restarted", j.Reason, SameFailureLimit)
		return
	}
	Requeue(j, fmt.Sprintf("restarted after %s (%s)", last.State, last.Reason))
}

// RestartPending reports whether the job ended its attempt FAILED or
// NODE_FAIL and is to be restarted once the attempt's tasks still stopping
// have ended (restartIfFailed): like a job being requeued, it comes back.
func (j *Job) RestartPending() bool {
	if !j.Live() || (j.State != JobNodeFail && j.State != JobFailed) || len(j.Attempts) == 0 {
		return false
	}
	last := j.Attempts[len(j.Attempts)-1]
	if last.Attempt != j.Attempt || last.Released() {
		return false
	}
	last.ExitCode, last.ExitSignal = j.ExitCode, j.ExitSignal // recorded at its release
	return policyRestarts(j, last) && sameFailures(j, last) < SameFailureLimit
}

// policyRestarts reports whether the job's policy restarts its attempt a,
// which failed: fenced, for a cause the policy names (a corrupt checkpoint
// whatever it names), with restarts left.
func policyRestarts(j *Job, a Attempt) bool {
	return !a.Unfenced && (j.Restart.On.Has(a.Cause) || a.Cause == RestartCheckpoint) && j.Attempt < j.Restart.MaxRestarts
}

// sameFailures counts the attempts, from last (the job's latest) back,
// that ended with the user's failure last ended with, up to a node fault.
func sameFailures(j *Job, last Attempt) int {
	if last.Cause != RestartExit {
		return 0
	}
	n := 1
	for i := len(j.Attempts) - 2; i >= 0; i-- {
		a := j.Attempts[i]
		if a.Cause != RestartExit || a.ExitCode != last.ExitCode || a.ExitSignal != last.ExitSignal {
			break
		}
		n++
	}
	return n
}

// FaultNodes are the nodes found at fault in the job's earlier attempts:
// its next attempts avoid them while it can run without them (the
// scheduler's candidate sets).
func (j *Job) FaultNodes() []string {
	var out []string
	for _, a := range j.Attempts {
		if a.FaultNode != "" && !slices.Contains(out, a.FaultNode) {
			out = append(out, a.FaultNode)
		}
	}
	return out
}
