package controller

import (
	"context"
	"strings"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// Changes to nodes' states, as Slurm's `scontrol update NodeName=...`.

// nodeUpdateStates maps what `scontrol update State=` takes to the stored
// state. RESUME and UNDRAIN put a node back in service.
var nodeUpdateStates = map[string]cluster.NodeState{
	"DRAIN": cluster.NodeDrain, "DOWN": cluster.NodeDown, "RESUME": cluster.NodeUp, "UNDRAIN": cluster.NodeUp,
}

func (c *controllerService) UpdateNode(ctx context.Context, req *phalanxv1.UpdateNodeRequest) (*phalanxv1.UpdateNodeResponse, error) {
	names, err := c.s.updateNodes(ctx, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &phalanxv1.UpdateNodeResponse{Names: names}, nil
}

// updateNodes drains, resumes or downs the named nodes: operators and
// administrators only. Every name is checked before any node changes. As
// in Slurm, RESUME and UNDRAIN pass over the nodes with nothing to resume
// (inService), and the answer is then an error that names them (the
// others are resumed).
func (s *Server) updateNodes(ctx context.Context, req *phalanxv1.UpdateNodeRequest) ([]string, error) {
	if err := s.access.require(ctx, levelOperator, "changing a node's state (scontrol update NodeName=...)"); err != nil {
		return nil, err
	}
	state, ok := nodeUpdateStates[strings.ToUpper(req.State)]
	reason := strings.TrimSpace(req.Reason)
	switch {
	case !ok:
		return nil, cluster.Errorf(cluster.ErrInvalid, "node state %q: use DRAIN, RESUME, UNDRAIN or DOWN", req.State)
	case len(req.Names) == 0:
		return nil, cluster.Errorf(cluster.ErrInvalid, "name the nodes to update (NodeName=...)")
	case state != cluster.NodeUp && reason == "":
		return nil, cluster.Errorf(cluster.ErrInvalid, "State=%s needs a Reason=... (say why, for the other admins)", strings.ToUpper(req.State))
	case len(reason) > maxReasonLen || strings.ContainsAny(reason, "\n\r"):
		return nil, cluster.Errorf(cluster.ErrInvalid, "the reason must be one line of at most %d bytes", maxReasonLen)
	}
	st, err := s.store.State()
	if err != nil {
		return nil, err
	}
	known := map[string]*cluster.Node{}
	for _, n := range st.Nodes {
		known[n.Name] = n
	}
	for _, name := range req.Names {
		n := known[name]
		switch {
		case n == nil:
			if _, found, _ := s.declared(name); found {
				return nil, cluster.Errorf(cluster.ErrConflict, "node %s has never registered: start its agent first", name)
			}
			return nil, cluster.Errorf(cluster.ErrNotFound, "Invalid node name specified: %s", name)
		case n.State == cluster.NodeInval && state == cluster.NodeUp:
			return nil, cluster.Errorf(cluster.ErrConflict, "node %s is INVAL (%s): it returns to service by itself when it registers with what its NodeName line declares; fix the node or the line", name, n.Reason)
		}
	}
	names, idle := req.Names, []string(nil)
	if state == cluster.NodeUp {
		reason = ""
		names, idle = nil, nil
		for _, name := range req.Names {
			if inService(known[name]) {
				idle = append(idle, name)
			} else {
				names = append(names, name)
			}
		}
	}
	id, _, _ := s.access.caller(ctx)
	now := s.cfg.Clock.Now()
	for _, name := range names {
		if _, err := s.propose(ctx, fsm.SetNodeState{Name: name, State: state, Reason: reason, User: id.User, Time: now}); err != nil {
			return nil, err
		}
		s.log.Info("node state changed", "node", name, "state", state, "reason", reason, "by", id.String())
	}
	if len(names) > 0 {
		s.kickScheduler()
	}
	if len(idle) > 0 {
		return names, nothingToResume(st, known, idle, names)
	}
	return names, nil
}

// inService reports whether RESUME or UNDRAIN has nothing to do on n: it
// is UP, with no health verdict held. (A node UP with one, registered
// again after it went silent with an XID held, is resumed: a resume
// clears the verdict, and its agent forgets the XIDs seen before it.)
func inService(n *cluster.Node) bool {
	return n.State == cluster.NodeUp && n.Health == ""
}

// nothingToResume is Slurm's error for a resume of nodes that are not
// DOWN or DRAINED, with each one's state as sinfo shows it, and the nodes
// resumed beside them.
func nothingToResume(st *store.State, known map[string]*cluster.Node, idle, resumed []string) error {
	usage := cluster.Usage(st.Active)
	byState := map[string][]string{}
	var states []string
	for _, name := range idle {
		d := usage[name].DisplayState(known[name])
		if byState[d] == nil {
			states = append(states, d)
		}
		byState[d] = append(byState[d], name)
	}
	parts := make([]string, len(states))
	for i, d := range states {
		verb := " is "
		if len(byState[d]) > 1 {
			verb = " are "
		}
		parts[i] = hostlist.Compress(byState[d]) + verb + d
	}
	msg := "Invalid node state specified: " + strings.Join(parts, ", ") + ", with nothing to resume: RESUME and UNDRAIN return DOWN, DRAINING and DRAINED nodes to service"
	if len(resumed) > 0 {
		msg += " (" + hostlist.Compress(resumed) + " resumed)"
	}
	return cluster.Errorf(cluster.ErrConflict, "%s", msg)
}
