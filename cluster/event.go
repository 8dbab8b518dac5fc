package cluster

import (
	"fmt"
	"strings"
	"time"
)

// Event is something that happened to a node, as `phx events` lists it:
// its registration, a change of its state, or a new verdict of its health
// checks. The store records an event in the same command as the change
// that causes it, so every replica holds the same events, each once.
type Event struct {
	// Seq numbers events from 1 in the order they happened; a number is
	// never reused, even after its event was forgotten.
	Seq     uint64
	Time    time.Time
	Node    string
	Job     JobID // a job's event (EventCheckpoint); 0 for a node's
	Kind    EventKind
	User    string // who caused it: a user, or SystemUser
	Message string // one line
}

// EventKind says what happened.
type EventKind string

// The kinds of node events.
const (
	// EventRegistered: its agent registered it (at start, or after the
	// controller lost it).
	EventRegistered EventKind = "registered"
	// EventDrained: it was set DRAIN, or the reason of its drain changed.
	EventDrained EventKind = "drained"
	// EventResumed: it was returned to service (UP).
	EventResumed EventKind = "resumed"
	// EventDown: it was set DOWN, by an administrator or for not responding.
	EventDown EventKind = "down"
	// EventUnhealthy: its health checks failed, or failed otherwise, and its
	// state was left as it was (an administrator's drain or down).
	EventUnhealthy EventKind = "unhealthy"
	// EventHealthy: its health checks pass again, and there was no drain of
	// theirs to lift.
	EventHealthy EventKind = "healthy"
	// EventCheckpoint: a job's checkpoint step was committed by every
	// rank (a job's event: Job set, Node empty).
	EventCheckpoint EventKind = "checkpoint"
	// EventHang: an agent found a task of the job making no progress for
	// its hang timeout (Job and Node set).
	EventHang EventKind = "hang"
	// EventCheckpointSkipped: an agent passed over a torn checkpoint step
	// when it staged the job in (Job and Node set).
	EventCheckpointSkipped EventKind = "checkpoint-skipped"
	// EventOutputAppended: an agent could not empty the job's output file
	// once for all its nodes, as its open mode asks, and appended to it
	// (Job and Node set).
	EventOutputAppended EventKind = "output-appended"
	// EventRequeued: a job went back to the queue for its next attempt
	// (Job set, Node empty): restarted after a failure its policy names,
	// preempted, or requeued by scontrol requeue. The message says why
	// (RequeuedEvent).
	EventRequeued EventKind = "requeued"
)

// AgentJobEvents are the kinds of job events agents report.
var AgentJobEvents = []EventKind{EventHang, EventCheckpointSkipped, EventOutputAppended}

// stateEvents is the event of setting each stored state.
var stateEvents = map[NodeState]EventKind{NodeUp: EventResumed, NodeDrain: EventDrained, NodeDown: EventDown}

// RegisteredEvent is the event of node n's registration; old is the node
// as it was before (nil for a new one), n as it is after.
func RegisteredEvent(old, n *Node) Event {
	var b strings.Builder
	b.WriteString(count(n.GPUs, "GPU"))
	if n.GPUModel != "" {
		fmt.Fprintf(&b, " (%s)", n.GPUModel)
	}
	fmt.Fprintf(&b, ", %s, %s, %d MB", count(len(n.NICs), "NIC"), count(n.CPUs, "CPU"), n.MemoryMB)
	switch {
	case old == nil && n.State != NodeUp: // INVAL
		fmt.Fprintf(&b, "; %s", stateWithReason(n))
	case old == nil:
	case old.State != n.State:
		fmt.Fprintf(&b, "; %s again (was %s)", n.State, stateWithReason(old))
	case n.State != NodeUp:
		fmt.Fprintf(&b, "; stays %s", stateWithReason(n))
	}
	return Event{Time: n.Registered, Node: n.Name, Kind: EventRegistered, User: SystemUser, Message: b.String()}
}

// StateEvent is the event of setting a node's state by user: old is the
// node before, n after.
func StateEvent(old, n *Node, user string) Event {
	msg := n.Reason
	if n.State == NodeUp {
		msg = "was " + stateWithReason(old)
	}
	return Event{Time: n.StateTime, Node: n.Name, Kind: stateEvents[n.State], User: user, Message: msg}
}

// count is "1 thing" or "N things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func stateWithReason(n *Node) string {
	if n.Reason == "" {
		return string(n.State)
	}
	return string(n.State) + ": " + n.Reason
}

// SetHealth applies the verdict of a node's health checks, problems (every
// failing check as one line; empty when they all pass), given at time t. A
// node that is UP is drained by SystemUser with the problems as reason,
// and a node its checks drained gets the new problems as reason or, when
// they pass, is resumed. A node an administrator drained or downed keeps
// its state; the verdict is recorded and is an event all the same.
//
// It returns the node after the verdict and its event; changed is false
// when the verdict changes nothing (the same problems as before, or as the
// drain of the checks says), and then there is no event.
func SetHealth(n *Node, problems string, t time.Time) (u *Node, e Event, changed bool) {
	ours := n.State == NodeDrain && n.ReasonUser == SystemUser
	switch {
	case ours:
		changed = problems != n.Reason
	case n.State == NodeUp:
		changed = problems != "" || n.Health != ""
	default:
		changed = problems != n.Health
	}
	if !changed {
		return n, Event{}, false
	}
	u = n.Clone()
	u.Health = problems
	e = Event{Time: t, Node: n.Name, User: SystemUser}
	switch {
	case problems != "" && (ours || n.State == NodeUp):
		u.State, u.Reason, u.ReasonUser, u.StateTime = NodeDrain, problems, SystemUser, t
		e.Kind, e.Message = EventDrained, problems
	case ours:
		u.State, u.Reason, u.ReasonUser, u.StateTime = NodeUp, "", SystemUser, t
		e.Kind, e.Message = EventResumed, "health checks pass (was "+stateWithReason(n)+")"
	case problems != "":
		e.Kind, e.Message = EventUnhealthy, problems+left(n)
	default:
		e.Kind, e.Message = EventHealthy, "health checks pass"+left(n)
	}
	return u, e, true
}

// left says what state a health verdict left a node in, and whose it is:
// nothing for an UP node.
func left(n *Node) string {
	switch {
	case n.State == NodeUp:
		return ""
	case n.ReasonUser == "":
		return " (left " + string(n.State) + ")"
	}
	return " (left " + string(n.State) + " by " + n.ReasonUser + ")"
}

// RequeuedEvent is the event of job j's going back to the queue, j as
// Requeue left it: why its last attempt ended, at the time it ended, and
// what follows. fault is the node found at fault for that attempt as the
// state holds it now (nil: none, or unknown): one an administrator set
// DOWN is said to be so.
func RequeuedEvent(j *Job, fault *Node) Event {
	e := Event{Job: j.ID, Kind: EventRequeued, User: SystemUser}
	n := len(j.Attempts)
	if n == 0 || j.Attempts[n-1].Attempt != j.Attempt-1 || !j.Attempts[n-1].Released() {
		e.Message = "requeued: " + j.Reason // a job from before attempts were recorded
		return e
	}
	a := j.Attempts[n-1]
	e.Time = a.EndTime
	var b strings.Builder
	b.WriteString(requeuedBecause(a, fault))
	fmt.Fprintf(&b, " (attempt %d ended %s", a.Attempt, a.State)
	if !a.State.ComingBack() {
		fmt.Fprintf(&b, "; restart %d of %d", j.Attempt, j.Restart.MaxRestarts)
	}
	if faults := j.FaultNodes(); len(faults) > 0 {
		fmt.Fprintf(&b, "; attempt %d avoids %s while it can", j.Attempt, someNodes(faults))
	}
	b.WriteString(")")
	e.Message = b.String()
	return e
}

// maxListedNodes bounds the nodes an event's message names, so that it
// stays a line of a few KiB.
const maxListedNodes = 8

// someNodes lists nodes, the first maxListedNodes of them and how many
// more.
func someNodes(nodes []string) string {
	if len(nodes) <= maxListedNodes {
		return strings.Join(nodes, ",")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:maxListedNodes], ","), len(nodes)-maxListedNodes)
}

// requeuedBecause says why attempt a, which ended, was followed by
// another.
func requeuedBecause(a Attempt, fault *Node) string {
	switch {
	case a.State == JobPreempted && a.PreemptedFor.Job != 0:
		return fmt.Sprintf("requeued because it was preempted for job %d", a.PreemptedFor.Job)
	case a.State == JobPreempted:
		return "requeued because it was preempted"
	case a.State == JobRequeued:
		return "requeued by scontrol requeue"
	}
	switch a.Cause {
	case RestartNode:
		switch {
		case a.FaultNode == "":
			return "requeued because a task was lost with no node at fault: " + a.Reason
		case fault != nil && fault.Name == a.FaultNode && fault.State == NodeDown && fault.Reason == a.Reason &&
			fault.ReasonUser != "" && fault.ReasonUser != SystemUser:
			return fmt.Sprintf("requeued because node %s was set DOWN by %s: %s", a.FaultNode, fault.ReasonUser, a.Reason)
		}
		return fmt.Sprintf("requeued because node %s failed: %s", a.FaultNode, a.Reason)
	case RestartExit:
		if a.ExitSignal != 0 {
			return fmt.Sprintf("requeued because a task was killed by signal %d", a.ExitSignal)
		}
		return fmt.Sprintf("requeued because a task exited with status %d", a.ExitCode)
	case RestartHang:
		return "requeued because a task hung: " + strings.TrimPrefix(a.Reason, ReasonHang+": ")
	case RestartCheckpoint:
		return "requeued because a rank's copy of the checkpoint step to resume from was corrupt: " + a.Reason
	}
	return "requeued: " + a.Reason
}
