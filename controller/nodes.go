package controller

import (
	"context"
	"errors"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// nodeService implements the API node agents call.
type nodeService struct {
	phalanxv1.UnimplementedNodeServiceServer
	s *Server
}

func (n *nodeService) RegisterNode(ctx context.Context, req *phalanxv1.RegisterNodeRequest) (*phalanxv1.RegisterNodeResponse, error) {
	s := n.s
	if req.Name == "" {
		return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "a node needs a name"))
	}
	if err := s.access.actsFor(ctx, req.Name); err != nil {
		return nil, toStatus(err)
	}
	conf, _, ok := s.declared(req.Name)
	if !ok {
		s.log.Warn("refused a node that phalanx.conf does not declare", "node", req.Name, "addr", req.Addr)
		return nil, toStatus(errUndeclared(req.Name))
	}
	nics, err := nicsFromProto(req.Nics)
	if err != nil {
		return nil, toStatus(err)
	}
	now := s.cfg.Clock.Now()
	node := &cluster.Node{
		Name:       req.Name,
		Addr:       req.Addr,
		CPUs:       int(req.Cpus),
		MemoryMB:   req.MemoryMb,
		GPUs:       int(req.Gpus),
		GPUModel:   req.GpuModel,
		Features:   req.Features,
		NICs:       nics,
		Registered: now,
		Fences:     req.Fences,
	}
	if s.cfg.Topology != nil {
		node.Leaf = s.cfg.Topology.LeafOf(req.Name)
	}
	node, _ = withLine(node, config.NodeConf{}, conf) // all it reported is known: nothing undecided
	if node.State == cluster.NodeInval {
		s.log.Warn("node registered with less than phalanx.conf declares: INVAL, not used", "node", req.Name, "reason", node.Reason)
	}
	if err := s.admitRegistration(req.Name, now); err != nil {
		return nil, toStatus(err)
	}
	if _, err := s.propose(ctx, fsm.RegisterNode{Node: node}); err != nil {
		return nil, toStatus(err)
	}
	if !s.seen(req.Name, now) {
		return nil, toStatus(cluster.Errorf(cluster.ErrConflict, "node %s was found silent while it registered; register again", req.Name))
	}
	s.log.Info("node registered", "node", req.Name, "addr", req.Addr, "gpus", req.Gpus, "model", req.GpuModel)
	s.kickScheduler()
	return &phalanxv1.RegisterNodeResponse{HeartbeatIntervalMs: s.cfg.HeartbeatInterval.Milliseconds(), LeaseMs: s.leaseMs(node.Fences),
		ClusterName: s.cfg.ClusterName}, nil
}

func (n *nodeService) Heartbeat(ctx context.Context, req *phalanxv1.HeartbeatRequest) (*phalanxv1.HeartbeatResponse, error) {
	s := n.s
	if err := s.access.actsFor(ctx, req.Name); err != nil {
		return nil, toStatus(err)
	}
	if !s.ready() {
		return nil, toStatus(s.notLeader())
	}
	if req.ShuttingDown {
		s.shuttingDown(req.Name, s.cfg.Clock.Now())
		return &phalanxv1.HeartbeatResponse{}, nil
	}
	node, err := s.store.Node(req.Name)
	switch {
	case errors.Is(err, cluster.ErrNotFound) || (err == nil && node.State == cluster.NodeDown && !registeredSinceDown(node)):
		// Unknown, or DOWN since it last registered (declared down while
		// silent, or set DOWN by an administrator): register again (the
		// agent stops its tasks first: the controller has them LOST
		// already). A node that registered since, and stays DOWN (an
		// administrator's), is not asked again: it would register every
		// heartbeat, an event and a Raft write each time.
		return s.reregister(ctx)
	case err != nil:
		// Anything else is this replica's trouble, not the node's: the agent
		// retries, and its tasks run on.
		return nil, toStatus(err)
	}
	// req.Running (the tasks the agent runs, re-adopted ones included) is
	// not reconciled with the store yet: a task the controller lost track
	// of is found only when its end is reported.
	if !s.seen(req.Name, s.cfg.Clock.Now()) {
		// Found silent, its DOWN on the way: no lease; its agent stops its
		// tasks and registers again.
		return s.reregister(ctx)
	}
	resp := &phalanxv1.HeartbeatResponse{LeaseMs: s.leaseMs(node.Fences), Unkillable: unkillableProto(s.cfg.Unkillable)}
	if req.Health {
		if err := s.applyHealth(ctx, node, req.Problems); err != nil {
			return nil, toStatus(err)
		}
		if t, ok := adminResumed(node); ok {
			resp.Resumed = timestamppb.New(t)
		}
		resp.HealthCheck = healthCheckProto(s.cfg.HealthCheck)
		resp.Drained = node.State == cluster.NodeDrain
	}
	return resp, nil
}

// registeredSinceDown reports whether DOWN node n registered after it
// went DOWN, by the Raft entries of both (the times were chosen by the
// clocks of whichever replicas led then). A node stored before the entries
// were kept falls back on the times.
func registeredSinceDown(n *cluster.Node) bool {
	if n.RegisteredIndex == 0 && n.StateIndex == 0 {
		return n.Registered.After(n.StateTime)
	}
	return n.RegisteredIndex > n.StateIndex
}

// reregister answers a heartbeat "register again", on which the agent
// stops every task of its node. Only the leader may say it, so it asks a
// majority first: a leader that lost its majority and has not noticed yet
// (resumed after a pause, cut off) finds every node silent, and would stop
// their tasks; it answers NotLeader instead, and the agent goes on to the
// real leader.
func (s *Server) reregister(ctx context.Context) (*phalanxv1.HeartbeatResponse, error) {
	if err := s.verifyLeader(ctx); err != nil {
		return nil, toStatus(err)
	}
	return &phalanxv1.HeartbeatResponse{Reregister: true}, nil
}

func (n *nodeService) WatchAssignments(req *phalanxv1.WatchAssignmentsRequest, stream phalanxv1.NodeService_WatchAssignmentsServer) error {
	s := n.s
	if err := s.access.actsFor(stream.Context(), req.Name); err != nil {
		return toStatus(err)
	}
	term := s.leaderTerm()
	if term == nil {
		return toStatus(s.notLeader())
	}
	// A leader deposed without knowing it yet (paused, cut off) would send
	// a set older than the real leader's, and the agent stops the tasks a
	// set leaves out. After the first set there is no need to ask: such a
	// leader commits nothing new, so it has nothing new to send.
	if err := s.verifyLeader(stream.Context()); err != nil {
		return toStatus(err)
	}
	var last *phalanxv1.Assignments
	for {
		// Read before the jobs: the set reflects at least this index.
		index := s.store.AppliedIndex()
		jobs, changed := s.store.NodeJobs(req.Name)
		cur := s.assignments(req.Name, jobs)
		if last == nil || !proto.Equal(last, cur) { // a new index alone is no news
			sent := &phalanxv1.Assignments{Assignments: cur.Assignments, Resumed: cur.Resumed, Index: index}
			if err := stream.Send(sent); err != nil {
				return err
			}
			last = cur
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-s.stop:
			return nil
		case <-term: // deposed: its state may fall behind; the agent follows the new leader
			return toStatus(s.notLeader())
		case <-changed:
		}
	}
}

// assignments derives what a node should run from the live jobs with a
// task on it (in ID order): each of its unended tasks there, with stop set
// once the job's attempt has ended (a preempted job's tasks stop with the
// preemption grace period).
func (s *Server) assignments(node string, jobs []*cluster.Job) *phalanxv1.Assignments {
	out := &phalanxv1.Assignments{}
	if n, err := s.store.Node(node); err == nil {
		if t, ok := adminResumed(n); ok {
			out.Resumed = timestamppb.New(t)
		}
	}
	addrs := map[string]string{}
	prolog := prologProto(s.cfg.Prolog)
	for _, j := range jobs {
		for _, na := range j.Alloc.Nodes {
			if _, ok := addrs[na.Node]; !ok {
				if n, err := s.store.Node(na.Node); err == nil {
					addrs[na.Node] = n.Addr
				}
			}
		}
		var wire *phalanxv1.Job
		for _, t := range j.Tasks { // in rank order
			if t.Node != node || t.State.Ended() {
				continue
			}
			if wire == nil {
				full, err := s.store.WithPayload(j)
				if err != nil {
					s.log.Error("assignment without its script", "job", j.ID, "err", err)
					full = j
				}
				wire = jobToProto(full, addrs)
			}
			a := &phalanxv1.Assignment{
				JobId:        uint64(j.ID),
				Attempt:      int32(j.Attempt),
				Rank:         int32(t.Rank),
				Job:          wire,
				GraceSeconds: int32(s.cfg.KillGrace / time.Second),
				Prolog:       prolog,
			}
			if j.State.Terminal() {
				a.Stop = true
				a.StopReason = string(j.State)
			}
			if j.State == cluster.JobPreempted {
				a.GraceSeconds = int32(s.cfg.PreemptGrace / time.Second)
			}
			for _, r := range j.SignalRequests {
				a.Signals = append(a.Signals, &phalanxv1.SignalRequest{Seq: r.Seq, Signal: int32(r.Signal), Scope: signalScopeProto(r.Scope), Step: r.Step})
			}
			out.Assignments = append(out.Assignments, a)
		}
	}
	return out
}

func (n *nodeService) ReportTaskStatus(ctx context.Context, req *phalanxv1.ReportTaskStatusRequest) (*phalanxv1.ReportTaskStatusResponse, error) {
	s := n.s
	if err := s.access.actsFor(ctx, req.Node); err != nil {
		return nil, toStatus(err)
	}
	t := s.cfg.Clock.Now()
	if req.Time != nil {
		t = req.Time.AsTime()
	}
	r := cluster.TaskReport{
		JobID:      cluster.JobID(req.JobId),
		Attempt:    int(req.Attempt),
		Rank:       int(req.Rank),
		Node:       req.Node,
		State:      cluster.TaskState(req.State),
		ExitCode:   int(req.ExitCode),
		ExitSignal: int(req.ExitSignal),
		Message:    cutReason(req.Message), // it may become the job's reason
		Time:       t,

		CheckpointCorrupt: req.CheckpointCorrupt && cluster.TaskState(req.State) == cluster.TaskFailed,
		AgentShutdown:     req.AgentShutdown && cluster.TaskState(req.State) == cluster.TaskLost,
		Fenced:            req.Fenced && cluster.TaskState(req.State) == cluster.TaskLost,
	}
	if !validTaskReportState(r.State) {
		return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "task state %q", req.State))
	}
	if r.Fenced && s.store.FeatureLevel() < store.FeatureFencedTasks {
		r.Fenced = false // a replica of an earlier release would read it so
	}
	if r.Fenced && !s.fenceExcused(r.Time, s.cfg.Clock.Now()) {
		// A leader answered all along: the node's silence ended its
		// lease, and the node is at fault, as for any task its agent
		// reports lost.
		r.Fenced = false
		s.log.Info("task fenced while this leader led: its node is at fault", "node", req.Node, "job", r.JobID, "attempt", r.Attempt)
	}
	if r.AgentShutdown { // before the job's restart can be placed there again
		s.shuttingDown(req.Node, s.cfg.Clock.Now())
	}
	if _, err := s.propose(ctx, fsm.ReportTask{Report: r}); err != nil {
		return nil, toStatus(err)
	}
	recorded := s.store.AppliedIndex() // the report's command, or later
	if !r.AgentShutdown {
		s.seen(req.Node, s.cfg.Clock.Now())
	}
	if r.State.Ended() {
		s.kickScheduler()
	}
	return &phalanxv1.ReportTaskStatusResponse{RecordedIndex: recorded}, nil
}

func validTaskReportState(st cluster.TaskState) bool {
	switch st {
	case cluster.TaskStarting, cluster.TaskRunning, cluster.TaskExited, cluster.TaskKilled,
		cluster.TaskTimeout, cluster.TaskFailed, cluster.TaskLost, cluster.TaskHung:
		return true
	}
	return false
}

// ReportCheckpoint records that a task copied a checkpoint step to its
// job's store. Only the task's own node may report it.
func (n *nodeService) ReportCheckpoint(ctx context.Context, req *phalanxv1.ReportCheckpointRequest) (*phalanxv1.ReportCheckpointResponse, error) {
	s := n.s
	if err := s.access.actsFor(ctx, req.Node); err != nil {
		return nil, toStatus(err)
	}
	if req.Step < 0 {
		return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "checkpoint step %d: steps are 0 or more", req.Step))
	}
	id := cluster.JobID(req.JobId)
	j, err := s.store.Job(id)
	if err != nil {
		return nil, toStatus(err)
	}
	if int(req.Attempt) == j.Attempt && (req.Rank < 0 || int(req.Rank) >= len(j.Tasks) || j.Tasks[req.Rank].Node != req.Node) {
		return nil, toStatus(cluster.Errorf(cluster.ErrPermission, "permission denied: rank %d of job %d does not run on %s", req.Rank, id, req.Node))
	}
	res, err := s.propose(ctx, fsm.CommitCheckpoint{ID: id, Attempt: int(req.Attempt), Rank: int(req.Rank), Step: req.Step, Time: s.cfg.Clock.Now()})
	if err != nil {
		return nil, toStatus(err)
	}
	if len(res.IDs) > 0 {
		s.log.Info("checkpoint complete", "job", id, "step", req.Step)
	}
	return &phalanxv1.ReportCheckpointResponse{}, nil
}

// ReportJobEvent records what an agent saw about a task of a job on its
// node (cluster.AgentJobEvents): a suspected hang, a torn checkpoint step
// skipped.
func (n *nodeService) ReportJobEvent(ctx context.Context, req *phalanxv1.ReportJobEventRequest) (*phalanxv1.ReportJobEventResponse, error) {
	s := n.s
	if err := s.access.actsFor(ctx, req.Node); err != nil {
		return nil, toStatus(err)
	}
	kind := cluster.EventKind(req.Kind)
	if !slices.Contains(cluster.AgentJobEvents, kind) {
		return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "job event kind %q: agents report %v", req.Kind, cluster.AgentJobEvents))
	}
	id := cluster.JobID(req.JobId)
	j, err := s.store.Job(id)
	if err != nil {
		return nil, toStatus(err)
	}
	if !slices.ContainsFunc(j.Tasks, func(t cluster.Task) bool { return t.Node == req.Node }) {
		return nil, toStatus(cluster.Errorf(cluster.ErrPermission, "permission denied: job %d has no task on %s", id, req.Node))
	}
	e := cluster.Event{Time: s.cfg.Clock.Now(), Node: req.Node, Job: id, Kind: kind, User: cluster.SystemUser, Message: cutReason(req.Message)}
	if _, err := s.propose(ctx, fsm.RecordEvent{Event: e}); err != nil {
		return nil, toStatus(err)
	}
	return &phalanxv1.ReportJobEventResponse{}, nil
}

func signalScopeProto(s cluster.SignalScope) phalanxv1.SignalScope {
	switch s {
	case cluster.SignalBatch:
		return phalanxv1.SignalScope_SIGNAL_SCOPE_BATCH
	case cluster.SignalFull:
		return phalanxv1.SignalScope_SIGNAL_SCOPE_FULL
	case cluster.SignalStep:
		return phalanxv1.SignalScope_SIGNAL_SCOPE_STEP
	}
	return phalanxv1.SignalScope_SIGNAL_SCOPE_UNSPECIFIED
}
