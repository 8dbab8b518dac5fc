package nodeagent

import (
	"context"
	"sync"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// session keeps the node known to the controller until ctx ends: register,
// heartbeat until told to register again, repeat; beside it, once the node
// first registered, a WatchAssignments stream and a ServeLogs stream
// (logs.go) kept open.
func (a *Agent) session(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	registered := false
	for ctx.Err() == nil {
		interval, ok := a.register(ctx)
		if !ok {
			return
		}
		if !registered {
			registered = true
			wg.Add(2)
			go func() { defer wg.Done(); a.watch(ctx) }()
			go func() { defer wg.Done(); a.serveLogs(ctx) }()
		}
		if !a.heartbeat(ctx, interval) {
			return
		}
		// The controller declared the node down and has its tasks LOST
		// already; it may give their GPUs to new jobs as soon as the node
		// registers again, so they must be gone by then.
		a.stopRunning(a.lostStop("node was declared down"))
	}
}

// register registers the node, retrying until it succeeds (ok) or ctx
// ends. It returns the heartbeat interval to use.
func (a *Agent) register(ctx context.Context) (interval time.Duration, ok bool) {
	req := a.registration()
	b := newBackoff()
	for {
		callCtx, cancel := context.WithTimeout(ctx, rpcTimeout)
		sent := runtime.BootClock()
		resp, err := a.client.RegisterNode(callCtx, req)
		cancel()
		if err == nil {
			a.renewLease(sent, resp.GetLeaseMs())
			name := resp.GetClusterName()
			a.clusterName.Store(&name)
			interval = a.cfg.HeartbeatInterval
			if ms := resp.GetHeartbeatIntervalMs(); ms > 0 {
				interval = min(interval, time.Duration(ms)*time.Millisecond)
			}
			a.log.Info("registered with controller", "heartbeat", interval)
			return interval, true
		}
		if status.Code(err) == codes.PermissionDenied {
			// Not declared in phalanx.conf, or not this node's certificate:
			// only an administrator can fix it; keep asking meanwhile.
			a.log.Error("the controller refuses this node; retrying", "controllers", a.cfg.Controllers, "err", err)
		} else {
			a.log.Warn("register with controller failed; retrying", "controllers", a.cfg.Controllers, "err", err)
		}
		if sleep(ctx, a.cfg.Clock, b.next()) != nil {
			return 0, false
		}
	}
}

// cluster is the cluster's name for SLURM_CLUSTER_NAME: the agent's own
// setting, else the controllers'.
func (a *Agent) cluster() string {
	if a.cfg.ClusterName != "" {
		return a.cfg.ClusterName
	}
	if name := a.clusterName.Load(); name != nil {
		return *name
	}
	return ""
}

// registration describes the node as discovered.
func (a *Agent) registration() *phalanxv1.RegisterNodeRequest {
	a.health.takeStale() // this registration carries their states
	req := &phalanxv1.RegisterNodeRequest{
		Name:     a.cfg.Name,
		Addr:     a.cfg.Addr,
		Cpus:     int32(a.cfg.CPUs),
		MemoryMb: a.cfg.MemoryMB,
		Gpus:     int32(len(a.cfg.GPUs)),
		Features: a.cfg.Features,
		Nics:     nicInfo(a.health.currentNICs()),
		Fences:   a.fences(),
	}
	for _, d := range a.cfg.GPUs {
		if req.GpuModel == "" {
			req.GpuModel = d.Model
		}
		req.GpuInfo = append(req.GpuInfo, &phalanxv1.GPUInfo{
			Index: int32(d.Index), Uuid: d.UUID, Model: d.Model, MemoryMb: d.MemoryMB, PciBusId: d.PCIBusID,
		})
	}
	return req
}

// heartbeat sends a heartbeat every interval, and at once when a health
// check's result changed, until the controller asks the node to register
// again (reregister is true) or ctx ends (false). A failed heartbeat is
// logged and the next one is sent on time: the controller decides when a
// silent node is down. Each carries the failing health checks.
func (a *Agent) heartbeat(ctx context.Context, interval time.Duration) (reregister bool) {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-a.cfg.Clock.After(interval):
		case <-a.health.changed:
		}
		a.refreshNICs(ctx)
		callCtx, cancel := context.WithTimeout(ctx, max(interval, rpcTimeout))
		gen := a.health.sent()
		sent := runtime.BootClock()
		resp, err := a.client.Heartbeat(callCtx, &phalanxv1.HeartbeatRequest{Name: a.cfg.Name, Running: a.running(),
			Health: true, Problems: a.health.problems()})
		cancel()
		switch {
		case err != nil:
			if ctx.Err() == nil {
				a.log.Warn("heartbeat failed", "err", err)
			}
		case resp.GetReregister():
			a.log.Warn("controller does not know this node; stopping its tasks and registering again")
			return true
		default:
			a.renewLease(sent, resp.GetLeaseMs())
			a.health.acknowledge(gen)
			if resp.GetResumed() != nil {
				a.forgetEvents(resp.GetResumed().AsTime())
			}
			hc, err := healthCheckFromWire(resp.GetHealthCheck())
			if err != nil {
				a.log.Error("the controller's health program settings are invalid: not running it", "err", err)
			}
			a.setHealthCheck(hc, resp.GetDrained())
			u, err := unkillableFromWire(resp.GetUnkillable())
			if err != nil {
				a.log.Error("the controller's UnkillableStep settings are invalid: keeping the last", "err", err)
			} else {
				a.setUnkillable(u)
			}
		}
	}
}

// shutdownNoticeTimeout bounds the last heartbeat, which says the agent
// stops: an unreachable controller finds out at the node's TTL.
const shutdownNoticeTimeout = 2 * time.Second

// sayShuttingDown tells the controller the agent stops, so that it places
// nothing more on the node (an idle one too, which has no task whose end
// would say so) until it hears from it again.
func (a *Agent) sayShuttingDown() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownNoticeTimeout)
	defer cancel()
	if _, err := a.client.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: a.cfg.Name, ShuttingDown: true}); err != nil {
		a.log.Info("could not tell the controller this agent stops; it will find the node silent", "err", err)
	}
}

// running lists the tasks started here that have not ended.
func (a *Agent) running() []*phalanxv1.TaskRef {
	a.mu.Lock()
	defer a.mu.Unlock()
	refs := make([]*phalanxv1.TaskRef, 0, len(a.tasks))
	for k := range a.tasks {
		refs = append(refs, &phalanxv1.TaskRef{JobId: k.job, Attempt: k.attempt, Rank: k.rank})
	}
	return refs
}

// watch keeps a WatchAssignments stream open until ctx ends, reconciling
// every message, and opens a new one after any error.
func (a *Agent) watch(ctx context.Context) {
	b := newBackoff()
	for {
		err := a.watchOnce(ctx, b)
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("assignment stream broken; reopening", "err", err)
		if sleep(ctx, a.cfg.Clock, b.next()) != nil {
			return
		}
	}
}

// watchOnce reads one stream until it fails; a message resets b.
func (a *Agent) watchOnce(ctx context.Context, b *backoff) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// FollowLeader: a leader that got stuck (stopped, cut off without its
	// connections closing) would hold the stream while the new leader's
	// assignments never arrive; the next heartbeat it answers ends it.
	stream, err := a.client.WatchAssignments(ctx, &phalanxv1.WatchAssignmentsRequest{Name: a.cfg.Name}, apiclient.FollowLeader())
	if err != nil {
		return err
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			return err
		}
		b.reset()
		a.reconcile(msg)
	}
}
