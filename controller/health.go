package controller

import (
	"context"
	"strings"

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
// leaves alone a node whose reason it did not set).

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
	reason := strings.Join(parts, "; ")
	if len(reason) > maxReasonLen {
		reason = strings.ToValidUTF8(reason[:maxReasonLen-3], "") + "..."
	}
	return reason, nil
}

// applyHealth drains node when its agent reports problems, and resumes it
// when a drain of the agent's checks is over. It proposes only changes.
func (s *Server) applyHealth(ctx context.Context, node *cluster.Node, problems []*phalanxv1.HealthProblem) error {
	reason, err := healthReason(problems)
	if err != nil {
		return err
	}
	ours := node.State == cluster.NodeDrain && node.ReasonUser == cluster.SystemUser
	var state cluster.NodeState
	switch {
	case reason != "" && (node.State == cluster.NodeUp || ours && node.Reason != reason):
		state = cluster.NodeDrain
		s.log.Warn("node unhealthy: draining it", "node", node.Name, "reason", reason)
	case reason == "" && ours:
		state = cluster.NodeUp
		s.log.Info("node healthy again: resuming it", "node", node.Name, "was", node.Reason)
	default:
		return nil
	}
	_, err = s.propose(ctx, fsm.SetNodeState{Name: node.Name, State: state, Reason: reason, User: cluster.SystemUser, Time: s.cfg.Clock.Now()})
	if err == nil {
		s.kickScheduler()
	}
	return err
}
