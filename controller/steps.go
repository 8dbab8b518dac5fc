package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// Steps started from outside a job (phx srun --jobid, Slurm's srun
// --jobid=ID --overlap). The leader checks who asks (the job's owner or an
// administrator), signs a step credential for each node (pki.SignStep)
// and sends the command to the node's agent down its ServeLogs stream
// (logs.go); each agent checks the credential before it starts anything,
// runs the command as the job's user in the job's environment and sends
// its output back, then its exit status.

// firstOuterStep is the first step number of steps started from outside
// a job: in-job sruns number theirs from 0 on each node, and must never
// meet these.
const firstOuterStep = 100000

// stepNumbers hands out step numbers per job (in the leader's memory: a new
// leader counts again; the numbers only name the steps in their
// environment).
type stepNumbers struct {
	mu   sync.Mutex
	next map[cluster.JobID]uint32
}

func (n *stepNumbers) take(job cluster.JobID) uint32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.next == nil {
		n.next = map[cluster.JobID]uint32{}
	}
	id := firstOuterStep + n.next[job]
	n.next[job]++
	return id
}

// RunStep runs a command on nodes of a running job (see above).
func (c *controllerService) RunStep(req *phalanxv1.RunStepRequest, stream phalanxv1.ControllerService_RunStepServer) error {
	s := c.s
	ctx := stream.Context()
	if s.leaderTerm() == nil {
		return toStatus(s.notLeader())
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return toStatus(cluster.Errorf(cluster.ErrInvalid, "no command to run"))
	}
	j, err := s.visible(cluster.JobID(req.JobId), false)
	if err != nil {
		return toStatus(err)
	}
	if err := s.mayRunIn(ctx, j); err != nil {
		return toStatus(err)
	}
	if j.State != cluster.JobRunning || j.Alloc == nil {
		return toStatus(cluster.Errorf(cluster.ErrConflict, "job %d is %s: steps run only in a running job", j.ID, j.State))
	}
	ranks, err := stepRanks(j, req.Nodes)
	if err != nil {
		return toStatus(err)
	}
	step := s.steps.take(j.ID)
	view := s.jobView(j, s.nodeAddrs())
	out := make(chan *phalanxv1.StepOutput, 16)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(ranks))
	for i, rank := range ranks {
		launch := &phalanxv1.StepLaunch{Argv: req.Argv, StepId: step, StepRank: int32(i), StepNodes: int32(len(ranks))}
		node := j.Alloc.Nodes[rank].Node
		if s.cfg.TLS != nil {
			g := pki.StepGrant{Job: uint64(j.ID), Step: step, Node: node, UID: j.UID, GID: j.GID, Argv: req.Argv}
			if launch.Credential, err = s.cfg.TLS.SignStep(g, s.cfg.Clock.Now()); err != nil {
				return toStatus(fmt.Errorf("signing the step credential: %w", err))
			}
		}
		read := &phalanxv1.LogRead{Job: view, Rank: int32(rank), Step: launch}
		replies, agentGone, end, err := s.logs.open(ctx, node, read)
		if err != nil {
			return toStatus(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer end()
			errs <- relayStep(ctx, s.stop, node, int32(i), step, replies, agentGone, out)
		}()
	}
	go func() { wg.Wait(); close(out) }()
	var first error
	for o := range out {
		if first == nil {
			if err := stream.Send(o); err != nil {
				first = err
				cancel()
			}
		}
	}
	close(errs)
	for err := range errs {
		if first == nil && err != nil {
			first = err
		}
	}
	return toStatus(first)
}

// mayRunIn refuses a step in job j unless the caller owns it or is an
// administrator (Slurm: the owner, or root): a step runs as the job's
// user, which operators may not act as.
func (s *Server) mayRunIn(ctx context.Context, j *cluster.Job) error {
	id, lvl, ok := s.access.caller(ctx)
	if !ok || lvl >= levelAdmin || j.UID == int(id.UID) {
		return nil
	}
	s.access.audit(ctx, "run a step in", "permission denied", "user", id.User, "uid", id.UID, "job", j.ID, "owner", j.User)
	return cluster.Errorf(cluster.ErrPermission, "permission denied: job %d %s; %s may run steps only in their own jobs", j.ID, s.access.owner(j), id)
}

// stepRanks turns the nodes a step asks for into the job's node ranks, in
// the job's order; none: all of them.
func stepRanks(j *cluster.Job, nodes []string) ([]int, error) {
	var ranks []int
	for r, slot := range j.Alloc.Nodes {
		if len(nodes) == 0 || slices.Contains(nodes, slot.Node) {
			ranks = append(ranks, r)
		}
	}
	for _, n := range nodes {
		if !slices.ContainsFunc(j.Alloc.Nodes, func(a cluster.NodeAlloc) bool { return a.Node == n }) {
			all := make([]string, len(j.Alloc.Nodes))
			for i, a := range j.Alloc.Nodes {
				all[i] = a.Node
			}
			return nil, cluster.Errorf(cluster.ErrInvalid, "node %s is not one of job %d's nodes (%s)", n, j.ID, hostlist.CompressInOrder(all))
		}
	}
	return ranks, nil
}

// relayStep passes one node's replies on as StepOutput until its exit
// status (nil), an error, ctx's end or the controller's stop.
func relayStep(ctx context.Context, stop <-chan struct{}, node string, rank int32, step uint32, replies <-chan *phalanxv1.ServeLogsRequest, agentGone <-chan struct{}, out chan<- *phalanxv1.StepOutput) error {
	first := true
	send := func(o *phalanxv1.StepOutput) bool {
		o.Node, o.Rank = node, rank
		if first {
			o.StepId, first = step, false
		}
		select {
		case out <- o:
			return true
		case <-ctx.Done():
			return false
		}
	}
	pass := func(r *phalanxv1.ServeLogsRequest) (done bool, err error) {
		if r.Error != "" {
			return true, cluster.Errorf(cluster.ErrConflict, "%s", r.Error)
		}
		if len(r.Data) > 0 && !send(&phalanxv1.StepOutput{Data: r.Data}) {
			return true, nil
		}
		if r.Eof {
			if !r.Exited {
				return true, cluster.Errorf(cluster.ErrConflict, "node %s ended the step without its exit status", node)
			}
			send(&phalanxv1.StepOutput{Exited: true, ExitCode: r.ExitCode, Signal: r.ExitSignal})
			return true, nil
		}
		return false, nil
	}
	gone, err := relay(ctx, stop, replies, agentGone, pass)
	if gone {
		return cluster.Errorf(cluster.ErrConflict, "node %s's agent went away while the step ran: its processes may still run there", node)
	}
	return err
}
