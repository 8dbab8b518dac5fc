package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/scheduler"
	"github.com/phalanx-hpc/phalanx/store"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// controllerService implements the user-facing API.
type controllerService struct {
	phalanxv1.UnimplementedControllerServiceServer
	s *Server
}

// maxRequestID bounds a request ID.
const maxRequestID = 64

// checkRequestID refuses a request ID the store cannot keep: too long, or
// with a NUL byte (the store's own separator, see store.cancelKey).
func checkRequestID(id []byte) error {
	switch {
	case len(id) > maxRequestID:
		return cluster.Errorf(cluster.ErrInvalid, "request ID of %d bytes: at most %d", len(id), maxRequestID)
	case bytes.IndexByte(id, 0) >= 0:
		return cluster.Errorf(cluster.ErrInvalid, "request ID %q holds a NUL byte: use printable characters (phx uses 32 hex digits)", id)
	}
	return nil
}

// Page sizes of list calls.
const (
	defaultPageSize = 1000
	maxPageSize     = 5000
)

func (c *controllerService) SubmitJob(ctx context.Context, req *phalanxv1.SubmitJobRequest) (*phalanxv1.SubmitJobResponse, error) {
	resp, err := c.s.submit(ctx, req.Spec, req.TestOnly, []byte(req.RequestId))
	return resp, toStatus(err)
}

// submit admits a job and commits it. With a request ID it is exactly-once:
// a request already committed answers with its job, whether the retry
// arrives here or races the first attempt into the log (the store decides).
func (s *Server) submit(ctx context.Context, spec *phalanxv1.JobSpec, testOnly bool, requestID []byte) (*phalanxv1.SubmitJobResponse, error) {
	if err := checkRequestID(requestID); err != nil {
		return nil, err
	}
	if id, ok := s.store.RequestJob(requestID); ok && len(requestID) > 0 && !testOnly {
		return &phalanxv1.SubmitJobResponse{JobId: uint64(id)}, nil
	}
	job, err := jobFromSpec(spec, s.cfg.MaxScriptSize)
	if err != nil {
		return nil, err
	}
	if err := cluster.CheckBeginDeadline(job.BeginTime, job.Deadline, s.cfg.Clock.Now()); err != nil {
		return nil, err
	}
	if err := s.access.own(ctx, job); err != nil {
		return nil, err
	}
	if s.IsLeader() && !s.ready() { // just elected: let the takeover adopt the config first
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s.WaitLeader(wctx)
		cancel()
	}
	st := s.store.Config()
	if err := s.admit(job, st); err != nil {
		return nil, err
	}
	if err := takesJobs(st.Partitions, job.Partition); err != nil {
		return nil, err
	}
	if err := s.gate.checkDependency(job); err != nil {
		return nil, err
	}
	var array cluster.ArraySpec
	if spec.Array != "" {
		if array, err = cluster.ParseArray(spec.Array, s.cfg.MaxArraySize); err != nil {
			return nil, err
		}
	}
	if err := s.checkJobCount(len(array.Tasks)); err != nil && !testOnly {
		return nil, err
	}
	now := s.cfg.Clock.Now()
	if testOnly {
		full, err := s.store.State()
		if err != nil {
			return nil, err
		}
		return &phalanxv1.SubmitJobResponse{ExpectedStart: ts(s.expectedStart(job, full, now)), Partition: job.Partition}, nil
	}
	s.mu.Lock()
	if !s.IsLeader() || s.nextID == 0 {
		s.mu.Unlock()
		return nil, s.notLeader()
	}
	job.ID = s.nextID
	s.nextID += cluster.JobID(max(len(array.Tasks), 1)) // an array's tasks take the IDs after its own
	s.inflight[job.ID] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.inflight, job.ID)
		s.mu.Unlock()
	}()
	job.SubmitTime = now
	job.State = cluster.JobPending
	job.Reason = string(cluster.ReasonNone)
	// The payload goes to the log as the client sent it, without building
	// a map of the environment on the way.
	payload, err := codec.EncodePayload(job.Script, cluster.EnvironOf(spec.Environment, spec.Env))
	if err != nil {
		return nil, err
	}
	job.Script = ""
	res, err := s.propose(ctx, fsm.SubmitJob{Job: job, Payload: payload, RequestID: requestID, Array: array})
	if err != nil {
		return nil, err
	}
	s.kickScheduler()
	return &phalanxv1.SubmitJobResponse{JobId: uint64(res.IDs[0])}, nil
}

// checkJobCount refuses a submit when MaxJobCount jobs are not finished,
// or would not be with the tasks of an array (tasks: 0 for a plain job).
func (s *Server) checkJobCount(tasks int) error {
	if s.cfg.MaxJobCount == 0 {
		return nil
	}
	if active, _, _ := s.store.Counts(); active+max(tasks, 1) > s.cfg.MaxJobCount {
		return cluster.Errorf(cluster.ErrLimit, "the cluster holds MaxJobCount=%d jobs that have not finished: submit again once some have ended, or raise MaxJobCount", s.cfg.MaxJobCount)
	}
	return nil
}

// admit checks a job against its partition and the registered nodes: it
// resolves the default partition and time limit and refuses what can never
// run, as Slurm does at submit.
func (s *Server) admit(job *cluster.Job, st *store.State) error {
	switch job.HangTimeout {
	case 0:
		job.HangTimeout = s.cfg.DefaultHangTimeout
	case hangOff:
		job.HangTimeout = 0
	}
	if err := cluster.ValidateHangTimeout(job.HangTimeout, s.cfg.MinHangTimeout); err != nil {
		return err
	}
	// Whether the job can ever run depends on the configuration only: no
	// jobs, no liveness, so a submit costs the same whatever the queue,
	// and the answer is remembered by request shape until the nodes or
	// partitions change.
	snap := &scheduler.Snapshot{Nodes: st.Nodes, Partitions: st.Partitions, Topology: s.cfg.Topology}
	err := scheduler.Admit(snap, job, func(snap *scheduler.Snapshot, job *cluster.Job) error {
		return s.feasible.check(st, job, func() error { return scheduler.Feasible(snap, job) })
	})
	if err != nil {
		return err
	}
	return s.checkGroups(job, st.Partitions)
}

// takesJobs refuses a new job, or a job moved, into a partition that takes
// none (Partition.TakesJobs).
func takesJobs(parts []*cluster.Partition, name string) error {
	for _, p := range parts {
		if p.Name == name {
			return p.TakesJobs()
		}
	}
	return nil
}

func (c *controllerService) GetJob(ctx context.Context, req *phalanxv1.GetJobRequest) (*phalanxv1.Job, error) {
	j, err := c.s.visible(cluster.JobID(req.JobId), c.s.access.seesPrivateOf(ctx, cluster.JobID(req.JobId)))
	if err != nil {
		return nil, toStatus(err)
	}
	if err := c.s.access.mayRead(ctx, j); err != nil {
		return nil, toStatus(err)
	}
	return c.s.jobView(j, c.s.nodeAddrs()), nil
}

// visible returns a job that is active or ended within MinJobAge, as
// Slurm's controller shows them (older ones are accounting's); with
// payload, with its script and environment.
func (s *Server) visible(id cluster.JobID, payload bool) (*cluster.Job, error) {
	read := s.store.JobRecord
	if payload {
		read = s.store.Job
	}
	j, err := read(id)
	if err == nil && !s.recent(j) {
		err = cluster.ErrNotFound
	}
	if errors.Is(err, cluster.ErrNotFound) {
		return nil, cluster.Errorf(cluster.ErrNotFound, "Invalid job id specified: %d", id)
	}
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	return j, nil
}

// recent reports whether the controller still shows a job: it is in the
// queue or holds resources, or it ended less than MinJobAge ago.
func (s *Server) recent(j *cluster.Job) bool {
	return j.InQueue() || j.Live() || s.cfg.Clock.Now().Sub(j.EndTime) < s.cfg.MinJobAge
}

// jobView converts a job, script and environment included, with the
// leader's pending reason.
func (s *Server) jobView(j *cluster.Job, addrs map[string]string) *phalanxv1.Job {
	out := jobToProto(j, addrs)
	out.Priority = shownPriority(j, s.cfg.Clock.Now(), s.priorityOptions())
	s.addPending([]*phalanxv1.Job{out})
	return out
}

// addPending gives the pending jobs among jobs the leader's reason and
// expected start, and their dependency as Slurm shows it (gate.go).
func (s *Server) addPending(jobs []*phalanxv1.Job) {
	s.gate.showDependencies(jobs)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range jobs {
		if j.State != string(cluster.JobPending) || cluster.PendingReason(j.Reason).Held() {
			continue // a hold is shown as it is now (jobToProto)
		}
		if p, ok := s.pending.get(cluster.JobID(j.Id)); ok && !p.Reason.Held() {
			setPending(j, p) // a hold the last pass saw is gone: no reason until the next
		}
	}
}

func (s *Server) nodeAddrs() map[string]string {
	nodes := s.store.Nodes()
	addrs := make(map[string]string, len(nodes))
	for _, n := range nodes {
		addrs[n.Name] = n.Addr
	}
	return addrs
}

// withArrayTasks adds to ids the tasks of each job array one of them names
// by the array's ID, as squeue -j does.
func (s *Server) withArrayTasks(ids []cluster.JobID) []cluster.JobID {
	out := ids
	for _, id := range ids {
		j, err := s.store.JobRecord(id)
		if err != nil || j.Array == nil || j.Array.JobID != id {
			continue
		}
		for t := id + 1; t < id+cluster.JobID(j.Array.Count); t++ {
			if !slices.Contains(ids, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// ListJobs answers one page, bounded by count and by encoded size: the
// store offers each selected job to a listPage, which converts it and
// ends the page before it would pass maxPageBytes.
func (c *controllerService) ListJobs(ctx context.Context, req *phalanxv1.ListJobsRequest) (*phalanxv1.ListJobsResponse, error) {
	s := c.s
	q, err := listQuery(req, s.cfg.Clock.Now(), s.cfg.MinJobAge)
	if err != nil {
		return nil, toStatus(err)
	}
	s.access.hidePrivate(ctx, &q)
	q.IDs = s.withArrayTasks(q.IDs)
	page := &listPage{addrs: s.nodeAddrs(), now: s.cfg.Clock.Now(), opts: s.priorityOptions()}
	q.Take = page.take
	_, next, err := s.store.Jobs(q)
	if err != nil {
		return nil, toStatus(err)
	}
	s.addPending(page.jobs)
	out := &phalanxv1.ListJobsResponse{Jobs: page.jobs, ClusterName: s.cfg.ClusterName}
	if next != 0 {
		out.NextPageToken = strconv.FormatUint(uint64(next), 10)
	}
	return out, nil
}

// maxPageBytes bounds the encoded jobs of one list page, far inside
// gRPC's default 4 MiB limit on what a client receives, whatever the
// jobs: a page ends before the job that would pass it (only a page's
// first job can, alone). listSlack covers what is added after sizing
// (a pending reason and expected start) and each job's framing.
const (
	maxPageBytes = 1 << 20
	listSlack    = 64
)

// listPage is one page of a listing, converted for the wire (jobs in
// lists come without script and environment) as the store offers them.
type listPage struct {
	addrs map[string]string
	now   time.Time         // the priority scores' time
	opts  scheduler.Options // and their options
	jobs  []*phalanxv1.Job
	bytes int
}

// take adds j unless the page is not empty and j would take it past
// maxPageBytes.
func (p *listPage) take(j *cluster.Job) bool {
	v := jobToProto(j, p.addrs)
	v.Priority = shownPriority(j, p.now, p.opts)
	v.Spec.Script, v.Spec.Environment, v.Spec.Env = "", nil, nil
	n := proto.Size(v) + listSlack
	if len(p.jobs) > 0 && p.bytes+n > maxPageBytes {
		return false
	}
	p.jobs, p.bytes = append(p.jobs, v), p.bytes+n
	return true
}

// expectedStart answers sbatch --test-only: a scheduling pass over the
// current state with the job added says when it would start (now, a
// reservation's start, or zero when no estimate exists). Nothing is committed.
// As in a real pass, the pending gate sets aside the jobs that may not
// start yet (held, before their --begin, waiting on a dependency), and no
// estimate exists while the job is held or waits on a dependency. A job
// with a --begin is judged by the pass at its begin: it starts then, or
// when the jobs holding what it needs end.
func (s *Server) expectedStart(job *cluster.Job, st *store.State, now time.Time) time.Time {
	probe := job.Clone()
	probe.ID = cluster.JobID(math.MaxUint64) // after every real job
	probe.SubmitTime, probe.State = now, cluster.JobPending
	at := now
	if probe.BeginTime.After(now) {
		at = probe.BeginTime
	}
	jobs := append(append(make([]*cluster.Job, 0, len(st.Active)+1), st.Active...), probe)
	jobs, gate := s.gate.sift(jobs, at)
	if info, ok := gate.waiting[probe.ID]; ok {
		return info.ExpectedStart
	}
	plan := scheduler.Schedule(s.snapshot(st, jobs), at)
	for _, p := range plan.Placements {
		if p.Job == probe.ID {
			return at
		}
	}
	return plan.Pending[probe.ID].ExpectedStart
}

// feasibility remembers scheduler.Feasible's answers by FeasibleKey for
// one configuration version.
type feasibility struct {
	mu      sync.Mutex
	version uint64
	answers map[string]error
}

// maxFeasible bounds how many request shapes are remembered.
const maxFeasible = 10000

func (f *feasibility) check(st *store.State, j *cluster.Job, compute func() error) error {
	key := scheduler.FeasibleKey(j)
	f.mu.Lock()
	if f.answers == nil || f.version != st.ConfigVersion || len(f.answers) >= maxFeasible {
		f.version, f.answers = st.ConfigVersion, map[string]error{}
	}
	err, ok := f.answers[key]
	f.mu.Unlock()
	if ok {
		return err
	}
	err = compute()
	f.mu.Lock()
	if f.version == st.ConfigVersion {
		f.answers[key] = err
	}
	f.mu.Unlock()
	return err
}
