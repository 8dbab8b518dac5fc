package nodeagent

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// rpcTimeout bounds one unary call to the controller.
const rpcTimeout = 10 * time.Second

// reporter delivers task reports to the controller in the order they were
// made, one at a time, retrying each until the controller acknowledges it.
// One queue for all tasks keeps every task's reports in order; a report
// is dropped only when the controller rejects it as malformed (it would
// never be accepted), never because the controller is unreachable.
type reporter struct {
	client phalanxv1.NodeServiceClient
	clock  Clock
	log    *slog.Logger

	mu      sync.Mutex
	queue   []queuedReport
	closing bool
	wake    chan struct{} // buffered 1: the queue or closing changed
}

type queuedReport struct {
	req *phalanxv1.ReportTaskStatusRequest
	// answered, when set, is called once the controller answered the
	// report: acknowledged it (err nil) with its recorded_index, or
	// rejected it (err the rejection).
	answered func(index uint64, err error)
}

func newReporter(client phalanxv1.NodeServiceClient, clock Clock, log *slog.Logger) *reporter {
	return &reporter{client: client, clock: clock, log: log, wake: make(chan struct{}, 1)}
}

// report queues req, stamping it with the current time.
func (r *reporter) report(req *phalanxv1.ReportTaskStatusRequest) {
	r.reportAnswered(req, nil)
}

// reportAnswered queues req, stamping it with the current time, and calls
// answered (unless nil) once the controller acknowledged or rejected it.
func (r *reporter) reportAnswered(req *phalanxv1.ReportTaskStatusRequest, answered func(index uint64, err error)) {
	req.Time = timestamppb.New(r.clock.Now())
	r.resend(req, answered)
}

// resend queues req as it is, its time included.
func (r *reporter) resend(req *phalanxv1.ReportTaskStatusRequest, answered func(index uint64, err error)) {
	r.mu.Lock()
	r.queue = append(r.queue, queuedReport{req: req, answered: answered})
	r.mu.Unlock()
	r.poke()
}

// close makes run return once the queue is empty.
func (r *reporter) close() {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.poke()
}

func (r *reporter) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// pending returns how many reports wait for delivery.
func (r *reporter) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue)
}

// run delivers reports until ctx ends, or until close was called and the
// queue is empty.
func (r *reporter) run(ctx context.Context) {
	for {
		r.mu.Lock()
		var head queuedReport
		if len(r.queue) > 0 {
			head = r.queue[0]
		}
		closing := r.closing
		r.mu.Unlock()
		switch {
		case head.req != nil:
			index, ok, err := r.deliver(ctx, head.req)
			if !ok {
				return
			}
			r.mu.Lock()
			r.queue = r.queue[1:]
			r.mu.Unlock()
			if head.answered != nil {
				head.answered(index, err)
			}
			continue
		case closing:
			return
		}
		select {
		case <-r.wake:
		case <-ctx.Done():
			return
		}
	}
}

// deliver sends req until the controller acknowledges it (with the index
// it recorded it at) or rejects it (rejected); ok is false when ctx ended
// first.
func (r *reporter) deliver(ctx context.Context, req *phalanxv1.ReportTaskStatusRequest) (index uint64, ok bool, rejected error) {
	b := newBackoff()
	for {
		callCtx, cancel := context.WithTimeout(ctx, rpcTimeout)
		resp, err := r.client.ReportTaskStatus(callCtx, req)
		cancel()
		if err == nil {
			r.log.Debug("task reported", "job", req.JobId, "attempt", req.Attempt, "rank", req.Rank, "state", req.State)
			return resp.GetRecordedIndex(), true, nil
		}
		if permanent(err) {
			r.log.Error("controller rejected task report; dropping it", "job", req.JobId,
				"attempt", req.Attempt, "rank", req.Rank, "state", req.State, "err", err)
			return 0, true, err
		}
		r.log.Warn("task report not delivered; retrying", "job", req.JobId, "rank", req.Rank,
			"state", req.State, "err", err)
		if sleep(ctx, r.clock, b.next()) != nil {
			return 0, false, nil
		}
	}
}

// permanent reports whether retrying a call that failed with err cannot
// succeed.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition,
		codes.PermissionDenied, codes.Unimplemented:
		return true
	}
	return false
}

// taskReport builds a report about task key in state st.
func (a *Agent) taskReport(key taskKey, st cluster.TaskState, msg string) *phalanxv1.ReportTaskStatusRequest {
	return &phalanxv1.ReportTaskStatusRequest{
		Node:    a.cfg.Name,
		JobId:   key.job,
		Attempt: key.attempt,
		Rank:    key.rank,
		State:   string(st),
		Message: msg,
	}
}
