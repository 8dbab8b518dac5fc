package controller

import (
	"context"
	"errors"
	"sync"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// phx logs. A task's output lives in a file its node's agent opened (on
// local or shared storage), so the leader asks that agent for it. Agents
// dial the controllers and never listen, so each keeps a ServeLogs stream
// open to the leader: the leader sends a LogRead down it, and the agent
// answers with the file's bytes, which JobLogs passes on to phx. The leader
// checks who may read (the job's owner, operators); the agent opens the
// file as the job's user.

// logHub holds the agents' ServeLogs streams, by node, and routes their
// replies to the JobLogs calls waiting for them.
type logHub struct {
	mu      sync.Mutex
	nodes   map[string]*logStream
	next    uint64
	waiters map[uint64]*logWaiter
}

// logWaiter is a JobLogs call waiting for its read's replies; done is
// closed when it stops waiting.
type logWaiter struct {
	replies chan *phalanxv1.ServeLogsRequest
	done    chan struct{}
}

// logStream is one agent's open ServeLogs stream.
type logStream struct {
	reads chan *phalanxv1.LogRead
	done  <-chan struct{}
}

func newLogHub() *logHub {
	return &logHub{nodes: map[string]*logStream{}, waiters: map[uint64]*logWaiter{}}
}

// attach makes ls node's stream, replacing an older one (an agent that
// reconnected), until detach.
func (h *logHub) attach(node string, ls *logStream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nodes[node] = ls
}

func (h *logHub) detach(node string, ls *logStream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.nodes[node] == ls {
		delete(h.nodes, node)
	}
}

// open starts a read on node's stream: it returns the channel its replies
// come on, one closed when the agent's stream ends, and a function that
// ends the read (telling the agent to stop when it is still sending).
func (h *logHub) open(ctx context.Context, node string, read *phalanxv1.LogRead) (replies <-chan *phalanxv1.ServeLogsRequest, agentGone <-chan struct{}, end func(), err error) {
	h.mu.Lock()
	ls := h.nodes[node]
	if ls == nil {
		h.mu.Unlock()
		return nil, nil, nil, cluster.Errorf(cluster.ErrConflict, "node %s's agent is not connected to the leader: its logs cannot be read now (is phalanx-agent running there?)", node)
	}
	h.next++
	read.Id = h.next
	w := &logWaiter{replies: make(chan *phalanxv1.ServeLogsRequest, 16), done: make(chan struct{})}
	h.waiters[read.Id] = w
	h.mu.Unlock()
	var once sync.Once
	end = func() {
		once.Do(func() { close(w.done) })
		h.mu.Lock()
		_, open := h.waiters[read.Id]
		delete(h.waiters, read.Id)
		h.mu.Unlock()
		if open {
			select { // best effort: the agent also stops when its stream ends
			case ls.reads <- &phalanxv1.LogRead{Id: read.Id, Cancel: true}:
			case <-ls.done:
			default:
			}
		}
	}
	select {
	case ls.reads <- read:
		return w.replies, ls.done, end, nil
	case <-ls.done:
	case <-ctx.Done():
	}
	end()
	return nil, nil, nil, cluster.Errorf(cluster.ErrConflict, "node %s's agent went away before the read could be sent", node)
}

// deliver passes an agent's reply to the read waiting for it, as fast as
// that read's phx takes them (the agent's stream waits meanwhile: that is
// the flow control); a reply that ends the read (eof, error) removes it.
func (h *logHub) deliver(r *phalanxv1.ServeLogsRequest) {
	h.mu.Lock()
	w, found := h.waiters[r.Id]
	if found && (r.Eof || r.Error != "") {
		delete(h.waiters, r.Id)
	}
	h.mu.Unlock()
	if !found {
		return // ended already
	}
	select {
	case w.replies <- r:
	case <-w.done:
	}
}

// ServeLogs is an agent's log stream (see logHub).
func (n *nodeService) ServeLogs(stream phalanxv1.NodeService_ServeLogsServer) error {
	s := n.s
	hello, err := stream.Recv()
	if err != nil {
		return err
	}
	node := hello.GetNode()
	if err := s.access.actsFor(stream.Context(), node); err != nil {
		return toStatus(err)
	}
	term := s.leaderTerm()
	if term == nil {
		return toStatus(s.notLeader())
	}
	done := make(chan struct{})
	ls := &logStream{reads: make(chan *phalanxv1.LogRead, 16), done: done}
	s.logs.attach(node, ls)
	defer s.logs.detach(node, ls)
	recvErr := make(chan error, 1)
	go func() {
		defer close(done)
		for {
			r, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			s.logs.deliver(r)
		}
	}()
	for {
		select {
		case read := <-ls.reads:
			if err := stream.Send(read); err != nil {
				return err
			}
		case err := <-recvErr:
			return err
		case <-stream.Context().Done():
			return nil
		case <-s.stop:
			return nil
		case <-term:
			return toStatus(s.notLeader())
		}
	}
}

// JobLogs streams one task's output file from its node (see logHub).
func (c *controllerService) JobLogs(req *phalanxv1.JobLogsRequest, stream phalanxv1.ControllerService_JobLogsServer) error {
	s := c.s
	ctx := stream.Context()
	if s.leaderTerm() == nil {
		return toStatus(s.notLeader())
	}
	j, err := s.visible(cluster.JobID(req.JobId), false)
	if err != nil {
		return toStatus(err)
	}
	if err := s.access.mayChange(ctx, j, "read the output of"); err != nil {
		return toStatus(err)
	}
	var nodes []cluster.NodeAlloc
	if j.Alloc != nil { // a job that never ran has none
		nodes = j.Alloc.Nodes
	}
	switch {
	case len(nodes) == 0:
		return toStatus(cluster.Errorf(cluster.ErrNotFound, "job %s has not run yet (it is %s): it has no output", j.Ref(), j.State))
	case req.Rank < 0 || int(req.Rank) >= len(nodes):
		return toStatus(cluster.Errorf(cluster.ErrInvalid, "job %s has nodes 0 to %d: no node rank %d", j.Ref(), len(nodes)-1, req.Rank))
	}
	node := nodes[req.Rank].Node
	view := s.jobView(j, s.nodeAddrs())
	read := &phalanxv1.LogRead{Job: view, Rank: req.Rank, Stderr: req.Stderr, Follow: req.Follow, Offset: req.Offset, Remove: req.Remove}
	replies, agentGone, end, err := s.logs.open(ctx, node, read)
	if err != nil {
		return toStatus(err)
	}
	defer end()
	first := true
	// pass sends a reply on; done when it ended the read.
	pass := func(r *phalanxv1.ServeLogsRequest) (done bool, err error) {
		if r.Error != "" {
			return true, toStatus(cluster.Errorf(cluster.ErrNotFound, "%s", r.Error))
		}
		if len(r.Data) > 0 || first {
			chunk := &phalanxv1.LogChunk{Data: r.Data}
			if first {
				chunk.Node, chunk.Path, first = node, r.Path, false
			}
			if err := stream.Send(chunk); err != nil {
				return true, err
			}
		}
		return r.Eof, nil
	}
	gone, err := relay(ctx, s.stop, replies, agentGone, pass)
	if gone {
		return toStatus(cluster.Errorf(cluster.ErrConflict, "node %s's agent went away while its output was read: run phx logs again", node))
	}
	return toStatus(err)
}

// errStopping ends a read when the controller stops.
var errStopping = errors.New("the controller is stopping")

// relay hands an agent's replies to a read to pass until pass says the
// read is done (with its error), ctx ends (nil), the controller stops
// (errStopping), or the agent's stream ends first (gone, after what it
// sent before it went).
func relay(ctx context.Context, stop <-chan struct{}, replies <-chan *phalanxv1.ServeLogsRequest, agentGone <-chan struct{},
	pass func(*phalanxv1.ServeLogsRequest) (bool, error)) (gone bool, err error) {
	for {
		select {
		case r := <-replies:
			if done, err := pass(r); done {
				return false, err
			}
		case <-agentGone:
			for {
				select {
				case r := <-replies:
					if done, err := pass(r); done {
						return false, err
					}
				default:
					return true, nil
				}
			}
		case <-ctx.Done():
			return false, nil
		case <-stop:
			return false, errStopping
		}
	}
}
