package controller

import (
	"context"
	"strings"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
)

// Node health, as agents report it with their heartbeats: an agent that
// checks its node (HeartbeatRequest.health) lists every check failing now.
// A healthy node with a failing check is drained, with the checks'
// messages as its reason and SystemUser as the reason's user; when every
// check passes again, a node so drained is resumed. A node an
// administrator drained or downed is left alone either way (as LBNL NHC
// leaves alone a node whose reason it did not set), but the new verdict is
// recorded, and is an event (cluster.SetHealth). Only a verdict that
// changes something is proposed: heartbeats are not replicated.
//
// Most problems are states that hold while they are reported (a link is
// down). An event problem (an XID) is seen once, and the agent keeps
// reporting it until an administrator returns the node to service: the
// heartbeat's reply then says when (HeartbeatResponse.resumed), and both
// sides forget the events seen before it.

// maxProblems bounds the failing checks one heartbeat may list: every
// RDMA port a node may register down, and room for its other checks. A
// heartbeat over it is refused, and a node whose heartbeats are refused
// goes DOWN, so the bound must hold whatever the hardware does.
const maxProblems = maxNICs + 64

// healthReason is the drain reason for problems: "check: message" each,
// joined by "; ", cut to maxReasonLen.
func healthReason(problems []*phalanxv1.HealthProblem) (string, error) {
	if len(problems) > maxProblems {
		return "", cluster.Errorf(cluster.ErrInvalid, "%d health problems in one heartbeat: at most %d", len(problems), maxProblems)
	}
	parts := make([]string, 0, len(problems))
	for _, p := range problems {
		if p.Check == "" || strings.ContainsAny(p.Check+p.Message, "\n\r") {
			return "", cluster.Errorf(cluster.ErrInvalid, "a health problem needs a check name, and one line of message")
		}
		parts = append(parts, p.Check+": "+p.Message)
	}
	return cutReason(strings.Join(parts, "; ")), nil
}

// cutReason cuts a reason the system writes to maxReasonLen bytes, marked
// with "...".
func cutReason(reason string) string {
	if len(reason) > maxReasonLen {
		reason = strings.ToValidUTF8(reason[:maxReasonLen-3], "") + "..."
	}
	return reason
}

// adminResumed says when an administrator returned node to service, if
// it is in service by their hand.
func adminResumed(node *cluster.Node) (time.Time, bool) {
	return node.StateTime, node.State == cluster.NodeUp && node.ReasonUser != "" && node.ReasonUser != cluster.SystemUser
}

// currentProblems drops the event problems an administrator's resume
// dealt with: those seen before it.
func currentProblems(node *cluster.Node, problems []*phalanxv1.HealthProblem) []*phalanxv1.HealthProblem {
	resumed, ok := adminResumed(node)
	if !ok {
		return problems
	}
	out := problems[:0:0]
	for _, p := range problems {
		if p.Event && p.Since != nil && p.Since.AsTime().Before(resumed) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// applyHealth proposes the verdict of node's checks when it changes
// anything: it drains a node whose agent reports problems, resumes one
// when a drain of its checks is over, and records a new verdict on a node
// an administrator drained. The store decides again when it applies it,
// on the node as it is then.
func (s *Server) applyHealth(ctx context.Context, node *cluster.Node, problems []*phalanxv1.HealthProblem) error {
	reason, err := healthReason(currentProblems(node, problems))
	if err != nil {
		return err
	}
	now := s.cfg.Clock.Now()
	_, e, changed := cluster.SetHealth(node, reason, now)
	if !changed {
		return nil
	}
	switch e.Kind {
	case cluster.EventDrained:
		s.log.Warn("node unhealthy: draining it", "node", node.Name, "reason", reason)
	case cluster.EventResumed:
		s.log.Info("node healthy again: resuming it", "node", node.Name, "was", node.Reason)
	default:
		s.log.Info("node health changed; its state is an administrator's", "node", node.Name, "state", node.State, "health", reason)
	}
	_, err = s.propose(ctx, fsm.SetNodeHealth{Name: node.Name, Problems: reason, Time: now})
	if err == nil {
		s.kickScheduler()
	}
	return err
}

// healthCheckProto is the wire form of the health program's settings; nil
// when there is none to run.
func healthCheckProto(h cluster.HealthCheck) *phalanxv1.HealthCheck {
	if !h.Enabled() {
		return nil
	}
	return &phalanxv1.HealthCheck{Program: h.Program, IntervalSeconds: int64(h.Interval / time.Second), NodeState: h.States.String()}
}

// unkillableProto is the wire form of what agents do with a task that
// outlives its SIGKILL; nil for the defaults.
func unkillableProto(u cluster.Unkillable) *phalanxv1.Unkillable {
	if u == (cluster.Unkillable{}) {
		return nil
	}
	return &phalanxv1.Unkillable{TimeoutSeconds: int64(u.Timeout / time.Second), Program: u.Program}
}

// prologProto is the wire form of the prolog; nil when there is none.
func prologProto(p cluster.Prolog) *phalanxv1.Prolog {
	if len(p.Programs) == 0 {
		return nil
	}
	return &phalanxv1.Prolog{Programs: p.Programs, TimeoutSeconds: int64(p.TimeoutOrDefault() / time.Second)}
}
