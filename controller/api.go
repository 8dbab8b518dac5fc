package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/scheduler"
	"github.com/phalanx-hpc/phalanx/store"
)

// controllerService implements the user-facing API.
type controllerService struct {
	phalanxv1.UnimplementedControllerServiceServer
	s *Server
}

func (c *controllerService) SubmitJob(ctx context.Context, req *phalanxv1.SubmitJobRequest) (*phalanxv1.SubmitJobResponse, error) {
	resp, err := c.s.submit(ctx, req.Spec, req.TestOnly)
	return resp, toStatus(err)
}

func (s *Server) submit(ctx context.Context, spec *phalanxv1.JobSpec, testOnly bool) (*phalanxv1.SubmitJobResponse, error) {
	job, err := jobFromSpec(spec)
	if err != nil {
		return nil, err
	}
	if s.IsLeader() && !s.ready() { // just elected: let the takeover adopt the config first
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s.WaitLeader(wctx)
		cancel()
	}
	st, err := s.store.State()
	if err != nil {
		return nil, err
	}
	if err := s.admit(job, st); err != nil {
		return nil, err
	}
	now := s.cfg.Clock.Now()
	if testOnly {
		return &phalanxv1.SubmitJobResponse{ExpectedStart: ts(s.expectedStart(job, st, now))}, nil
	}
	s.mu.Lock()
	if !s.IsLeader() || s.nextID == 0 {
		s.mu.Unlock()
		return nil, fmt.Errorf("submit: %w: try again in a moment or ask the leader", cluster.ErrNotLeader)
	}
	job.ID = s.nextID
	s.nextID++
	s.mu.Unlock()
	job.SubmitTime = now
	job.State = cluster.JobPending
	job.Reason = cluster.ReasonNone
	if _, err := s.propose(ctx, fsm.SubmitJob{Job: job}); err != nil {
		return nil, err
	}
	s.kickScheduler()
	return &phalanxv1.SubmitJobResponse{JobId: uint64(job.ID)}, nil
}

// admit checks a job against its partition and the registered nodes: it
// resolves the default partition and time limit and refuses what can never
// run, as Slurm does at submit.
func (s *Server) admit(job *cluster.Job, st *store.State) error {
	var part *cluster.Partition
	for _, p := range st.Partitions {
		if (job.Partition == "" && p.Default) || p.Name == job.Partition {
			part = p
			break
		}
	}
	if part == nil {
		if job.Partition == "" {
			return cluster.Errorf(cluster.ErrInvalid, "no default partition: name one with -p")
		}
		return cluster.Errorf(cluster.ErrNotFound, "invalid partition name specified: %s (phx sinfo lists the partitions)", job.Partition)
	}
	job.Partition = part.Name
	if job.TimeLimit == 0 {
		job.TimeLimit = part.DefaultTime
		if job.TimeLimit == 0 {
			job.TimeLimit = part.MaxTime
		}
	}
	if part.MaxTime > 0 && job.TimeLimit > part.MaxTime {
		return cluster.Errorf(cluster.ErrInvalid, "requested time limit %s exceeds partition %s's MaxTime %s", cluster.FormatDuration(job.TimeLimit), part.Name, cluster.FormatDuration(part.MaxTime))
	}
	if part.MaxNodes > 0 && job.Nodes > part.MaxNodes {
		return cluster.Errorf(cluster.ErrInvalid, "%d nodes exceed partition %s's MaxNodes %d", job.Nodes, part.Name, part.MaxNodes)
	}
	if err := checkAgainstPartition(job, part, st.Nodes); err != nil {
		return err
	}
	return scheduler.Feasible(s.snapshot(st, st.Active), job)
}

func (c *controllerService) CancelJob(ctx context.Context, req *phalanxv1.CancelJobRequest) (*phalanxv1.CancelJobResponse, error) {
	ids, err := c.s.cancel(ctx, req)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &phalanxv1.CancelJobResponse{}
	for _, id := range ids {
		out.Cancelled = append(out.Cancelled, uint64(id))
	}
	return out, nil
}

func (s *Server) cancel(ctx context.Context, req *phalanxv1.CancelJobRequest) ([]cluster.JobID, error) {
	var ids []cluster.JobID
	for _, id := range req.JobIds {
		if _, err := s.store.Job(cluster.JobID(id)); err != nil {
			return nil, jobLookupError(id, err)
		}
		ids = append(ids, cluster.JobID(id))
	}
	if len(req.JobIds) == 0 {
		if req.User == "" && req.Name == "" {
			return nil, cluster.Errorf(cluster.ErrInvalid, "name jobs by ID, user or name")
		}
		for _, j := range s.store.ActiveJobs() {
			if (req.User == "" || j.User == req.User) && (req.Name == "" || j.Name == req.Name) && j.InQueue() {
				ids = append(ids, j.ID)
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	res, err := s.propose(ctx, fsm.CancelJobs{IDs: ids, Time: s.cfg.Clock.Now(), Reason: "Cancelled by user"})
	if err != nil {
		return nil, err
	}
	s.kickScheduler()
	return res.IDs, nil
}

func (c *controllerService) GetJob(ctx context.Context, req *phalanxv1.GetJobRequest) (*phalanxv1.Job, error) {
	j, err := c.s.store.Job(cluster.JobID(req.JobId))
	if err != nil {
		return nil, toStatus(jobLookupError(req.JobId, err))
	}
	return c.s.jobView(j, c.s.nodeAddrs()), nil
}

func (s *Server) jobView(j *cluster.Job, addrs map[string]string) *phalanxv1.Job {
	s.mu.Lock()
	p, ok := s.pending[j.ID]
	s.mu.Unlock()
	if !ok {
		return jobToProto(j, addrs, nil)
	}
	return jobToProto(j, addrs, &p)
}

func (s *Server) nodeAddrs() map[string]string {
	nodes := s.store.Nodes()
	addrs := make(map[string]string, len(nodes))
	for _, n := range nodes {
		addrs[n.Name] = n.Addr
	}
	return addrs
}

func (c *controllerService) ListJobs(ctx context.Context, req *phalanxv1.ListJobsRequest) (*phalanxv1.ListJobsResponse, error) {
	s := c.s
	q := store.JobQuery{Finished: req.IncludeFinished || len(req.JobIds) > 0}
	q.Match = func(j *cluster.Job) bool { return (q.Finished || j.InQueue()) && matchJob(j, req) }
	jobs, _, err := s.store.Jobs(q)
	if err != nil {
		return nil, toStatus(err)
	}
	addrs := s.nodeAddrs()
	out := &phalanxv1.ListJobsResponse{}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, s.jobView(j, addrs))
	}
	return out, nil
}

func matchJob(j *cluster.Job, req *phalanxv1.ListJobsRequest) bool {
	if len(req.JobIds) > 0 && !slices.Contains(req.JobIds, uint64(j.ID)) {
		return false
	}
	if len(req.Users) > 0 && !slices.Contains(req.Users, j.User) {
		return false
	}
	if len(req.States) > 0 && !slices.Contains(req.States, string(j.State)) {
		return false
	}
	if len(req.Partitions) > 0 && !slices.Contains(req.Partitions, j.Partition) {
		return false
	}
	return true
}

func (c *controllerService) ListNodes(ctx context.Context, req *phalanxv1.ListNodesRequest) (*phalanxv1.ListNodesResponse, error) {
	s := c.s
	st, err := s.store.State()
	if err != nil {
		return nil, toStatus(err)
	}
	usage := cluster.Usage(st.Active)
	out := &phalanxv1.ListNodesResponse{}
	for _, n := range st.Nodes {
		if len(req.Names) > 0 && !slices.Contains(req.Names, n.Name) {
			continue
		}
		s.mu.Lock()
		seen := s.lastSeen[n.Name]
		s.mu.Unlock()
		out.Nodes = append(out.Nodes, nodeToProto(n, usage[n.Name], st.Partitions, seen))
	}
	if len(req.Names) > 0 && len(out.Nodes) == 0 {
		return nil, toStatus(fmt.Errorf("node %v: %w", req.Names, cluster.ErrNotFound))
	}
	return out, nil
}

func (c *controllerService) ListPartitions(ctx context.Context, req *phalanxv1.ListPartitionsRequest) (*phalanxv1.ListPartitionsResponse, error) {
	st, err := c.s.store.State()
	if err != nil {
		return nil, toStatus(err)
	}
	out := &phalanxv1.ListPartitionsResponse{}
	for _, p := range st.Partitions {
		out.Partitions = append(out.Partitions, partitionToProto(p, st.Nodes))
	}
	return out, nil
}

// jobLookupError words a failed job lookup as Slurm does for an unknown ID.
func jobLookupError(id uint64, err error) error {
	if errors.Is(err, cluster.ErrNotFound) {
		return cluster.Errorf(cluster.ErrNotFound, "Invalid job id specified: %d", id)
	}
	return fmt.Errorf("job %d: %w", id, err)
}

// expectedStart answers sbatch --test-only: a scheduling pass over the
// current state with the job added says when it would start (now, a
// reservation's start, or zero when no estimate exists). Nothing is committed.
func (s *Server) expectedStart(job *cluster.Job, st *store.State, now time.Time) time.Time {
	probe := job.Clone()
	probe.ID = cluster.JobID(math.MaxUint64) // after every real job
	probe.SubmitTime, probe.State = now, cluster.JobPending
	jobs := append(append(make([]*cluster.Job, 0, len(st.Active)+1), st.Active...), probe)
	plan := scheduler.Schedule(s.snapshot(st, jobs), now)
	for _, p := range plan.Placements {
		if p.Job == probe.ID {
			return now
		}
	}
	return plan.Pending[probe.ID].ExpectedStart
}
