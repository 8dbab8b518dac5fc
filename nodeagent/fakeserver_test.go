package nodeagent

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// fakeNodeService is an in-memory controller as agents see it: it records
// registrations, heartbeats and reports, streams whatever assignments the
// test sets, and fails calls when told to.
type fakeNodeService struct {
	phalanxv1.UnimplementedNodeServiceServer
	addr string

	mu         sync.Mutex
	registers  []*phalanxv1.RegisterNodeRequest
	heartbeats []*phalanxv1.HeartbeatRequest
	reports    []*phalanxv1.ReportTaskStatusRequest
	// lastHeartbeat[i] is the last heartbeat received before reports[i].
	lastHeartbeat  []*phalanxv1.HeartbeatRequest
	reportCalls    int
	watchCalls     int
	failReports    int                    // fail this many ReportTaskStatus calls
	rejectReports  int                    // reject this many as malformed (after failReports)
	noJob          map[uint64]bool        // reject reports for these jobs NotFound, as a state without them
	failWatches    int                    // fail this many WatchAssignments calls
	reregisterNext bool                   // answer the next heartbeat with reregister
	failHeartbeats bool                   // fail every heartbeat while set
	resumed        *timestamppb.Timestamp // answer heartbeats with it
	healthCheck    *phalanxv1.HealthCheck // and with it
	unkillable     *phalanxv1.Unkillable  // and with it
	assignments    *phalanxv1.Assignments
	changed        chan struct{} // closed and replaced on every set
	// index counts the reports accepted: the recorded_index they are
	// acknowledged with (sets carry the index setAt gives them).
	index uint64
	// onRegister, when set, is called (under mu) with each registration's
	// number, counting from 1, before it is answered.
	onRegister func(n int)
	// leads, when set, is the leader's address every unary answer names
	// (the phalanx-leader header), as a controller's.
	leads string
	// stuck, once closed, makes every call wait until its caller gives
	// up, and the streams send nothing more: a stopped controller.
	stuck chan struct{}
}

// stick makes f a controller that stopped: nothing answered, nothing sent.
func (f *fakeNodeService) stick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.stuck)
}

// answer waits while f is stuck, and names the leader when f says who
// leads.
func (f *fakeNodeService) answer(ctx context.Context) error {
	f.mu.Lock()
	stuck, leads := f.stuck, f.leads
	f.mu.Unlock()
	select {
	case <-stuck:
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	default:
	}
	if leads != "" {
		return grpc.SetHeader(ctx, metadata.Pairs("phalanx-leader", leads))
	}
	return nil
}

// leading makes f answer as the leader at its own address.
func (f *fakeNodeService) leading() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leads = f.addr
}

// startFakeNodeService serves a fakeNodeService on 127.0.0.1 and returns
// it with its address.
func startFakeNodeService(t *testing.T) (*fakeNodeService, string) {
	t.Helper()
	f := startFakeNodeServiceAt(t, "127.0.0.1:0")
	return f, f.addr
}

// startFakeNodeServiceAt serves a fakeNodeService on addr, set up by the
// setup functions before it serves its first call.
func startFakeNodeServiceAt(t *testing.T, addr string, setup ...func(*fakeNodeService)) *fakeNodeService {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNodeService{addr: lis.Addr().String(), assignments: &phalanxv1.Assignments{}, changed: make(chan struct{}), stuck: make(chan struct{})}
	for _, s := range setup {
		s(f)
	}
	srv := grpc.NewServer()
	phalanxv1.RegisterNodeServiceServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return f
}

func (f *fakeNodeService) RegisterNode(ctx context.Context, req *phalanxv1.RegisterNodeRequest) (*phalanxv1.RegisterNodeResponse, error) {
	if err := f.answer(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registers = append(f.registers, req)
	if f.onRegister != nil {
		f.onRegister(len(f.registers))
	}
	return &phalanxv1.RegisterNodeResponse{}, nil
}

func (f *fakeNodeService) Heartbeat(ctx context.Context, req *phalanxv1.HeartbeatRequest) (*phalanxv1.HeartbeatResponse, error) {
	if err := f.answer(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heartbeats = append(f.heartbeats, req)
	if f.failHeartbeats {
		return nil, status.Error(codes.Unavailable, "controller blip")
	}
	rereg := f.reregisterNext
	f.reregisterNext = false
	return &phalanxv1.HeartbeatResponse{Reregister: rereg, Resumed: f.resumed, HealthCheck: f.healthCheck, Unkillable: f.unkillable}, nil
}

func (f *fakeNodeService) ReportTaskStatus(ctx context.Context, req *phalanxv1.ReportTaskStatusRequest) (*phalanxv1.ReportTaskStatusResponse, error) {
	if err := f.answer(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reportCalls++
	if f.failReports > 0 {
		f.failReports--
		return nil, status.Error(codes.Unavailable, "controller blip")
	}
	if f.rejectReports > 0 {
		f.rejectReports--
		return nil, status.Error(codes.InvalidArgument, "task state \"BOGUS\"")
	}
	if f.noJob[req.JobId] {
		return nil, status.Errorf(codes.NotFound, "task report for job %d: not found", req.JobId)
	}
	f.reports = append(f.reports, req)
	var hb *phalanxv1.HeartbeatRequest
	if len(f.heartbeats) > 0 {
		hb = f.heartbeats[len(f.heartbeats)-1]
	}
	f.lastHeartbeat = append(f.lastHeartbeat, hb)
	f.index++
	return &phalanxv1.ReportTaskStatusResponse{RecordedIndex: f.index}, nil
}

func (f *fakeNodeService) WatchAssignments(_ *phalanxv1.WatchAssignmentsRequest, stream phalanxv1.NodeService_WatchAssignmentsServer) error {
	f.mu.Lock()
	f.watchCalls++
	if f.failWatches > 0 {
		f.failWatches--
		f.mu.Unlock()
		return status.Error(codes.Unavailable, "not the leader")
	}
	f.mu.Unlock()
	for {
		f.mu.Lock()
		cur, changed, stuck := f.assignments, f.changed, f.stuck
		f.mu.Unlock()
		select {
		case <-stuck:
			<-stream.Context().Done()
			return nil
		default:
		}
		if err := stream.Send(cur); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-stuck:
		case <-stream.Context().Done():
			return nil
		}
	}
}

// set replaces the node's assignments and streams them.
func (f *fakeNodeService) set(as ...*phalanxv1.Assignment) {
	f.setAt(0, as...)
}

// setAt is set, with the set read at index.
func (f *fakeNodeService) setAt(index uint64, as ...*phalanxv1.Assignment) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.assignments = &phalanxv1.Assignments{Assignments: as, Index: index}
	close(f.changed)
	f.changed = make(chan struct{})
}

// withoutJobs makes the fake reject the reports for jobs NotFound, as a
// controller whose state has no such jobs; none: it takes them again.
func (f *fakeNodeService) withoutJobs(jobs ...uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noJob = map[uint64]bool{}
	for _, j := range jobs {
		f.noJob[j] = true
	}
}

// reportsFor returns the delivered reports' states for a job, in order.
func (f *fakeNodeService) reportsFor(job uint64) []*phalanxv1.ReportTaskStatusRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*phalanxv1.ReportTaskStatusRequest
	for _, r := range f.reports {
		if r.JobId == job {
			out = append(out, proto.Clone(r).(*phalanxv1.ReportTaskStatusRequest))
		}
	}
	return out
}

// recorded returns the index the last report was acknowledged with.
func (f *fakeNodeService) recorded() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.index
}

func (f *fakeNodeService) counts() (registers, heartbeats, watches, reportCalls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.registers), len(f.heartbeats), f.watchCalls, f.reportCalls
}

// waitReport waits until job's reports include one in state, and returns
// it.
func (f *fakeNodeService) waitReport(t *testing.T, job uint64, state string) *phalanxv1.ReportTaskStatusRequest {
	t.Helper()
	var found *phalanxv1.ReportTaskStatusRequest
	eventually(t, 10*time.Second, func() error {
		for _, r := range f.reportsFor(job) {
			if r.State == state {
				found = r
				return nil
			}
		}
		return fmt.Errorf("job %d: no %s report; have %v", job, state, states(f.reportsFor(job)))
	})
	return found
}

func states(rs []*phalanxv1.ReportTaskStatusRequest) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.State
	}
	return out
}

// eventually retries f every 5ms until it returns nil, failing the test
// with f's last error after d.
func eventually(t *testing.T, d time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", d, err)
		}
		<-tick.C
	}
}
