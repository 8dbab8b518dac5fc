package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// The agent's side of phx logs (controller/logs.go): a ServeLogs stream
// kept open to the leader, on which it answers each read with the bytes
// of a task's output file, opened as the job's user.

// logChunk is the most a reply carries.
const logChunk = 64 << 10

// logPoll is how often a followed file is read again once at its end.
const logPoll = 250 * time.Millisecond

// serveLogs keeps a ServeLogs stream open until ctx ends, and opens a new
// one after any error.
func (a *Agent) serveLogs(ctx context.Context) {
	b := newBackoff()
	for {
		err := a.serveLogsOnce(ctx, b)
		if ctx.Err() != nil {
			return
		}
		a.log.Debug("log stream broken; reopening", "err", err)
		if sleep(ctx, a.cfg.Clock, b.next()) != nil {
			return
		}
	}
}

// serveLogsOnce serves one stream until it fails; a read resets b.
func (a *Agent) serveLogsOnce(ctx context.Context, b *backoff) error {
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, below: the reads see ctx end
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := a.client.ServeLogs(ctx, apiclient.FollowLeader()) // as the assignments (session.go)
	if err != nil {
		return err
	}
	var sendMu sync.Mutex
	send := func(r *phalanxv1.ServeLogsRequest) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(r)
	}
	if err := send(&phalanxv1.ServeLogsRequest{Node: a.cfg.Name}); err != nil {
		return err
	}
	var mu sync.Mutex
	reads := map[uint64]context.CancelFunc{}
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		b.reset()
		id := req.GetId()
		mu.Lock()
		if stop := reads[id]; stop != nil || req.GetCancel() {
			if stop != nil {
				stop()
				delete(reads, id)
			}
			mu.Unlock()
			continue
		}
		rctx, stop := context.WithCancel(ctx)
		reads[id] = stop
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer stop()
			if req.GetStep() != nil {
				a.runStep(rctx, stepFromWire(req), send)
			} else {
				a.readLog(rctx, req, send)
			}
			mu.Lock()
			delete(reads, id)
			mu.Unlock()
		}()
	}
}

// readLog answers one read: the file's bytes from the offset asked, then,
// when following, what is written while the task runs on this node, then
// eof; or one error.
func (a *Agent) readLog(ctx context.Context, req *phalanxv1.LogRead, send func(*phalanxv1.ServeLogsRequest) error) {
	id := req.GetId()
	f, path, err := a.openLog(req)
	if err != nil {
		send(&phalanxv1.ServeLogsRequest{Id: id, Error: err.Error()})
		return
	}
	defer f.Close()
	buf := make([]byte, logChunk)
	first := true
	for {
		// Whether the task runs is asked before reading: a task that ends
		// meanwhile has its last bytes read on the next round.
		running := req.GetFollow() && a.runsTask(req.GetJob().GetId(), int(req.GetRank()))
		for {
			n, err := f.Read(buf)
			if n > 0 {
				r := &phalanxv1.ServeLogsRequest{Id: id, Data: buf[:n]}
				if first {
					r.Path, first = path, false
				}
				if send(r) != nil {
					return
				}
			}
			if errors.Is(err, io.EOF) || (err == nil && n == 0) {
				break
			}
			if err != nil {
				send(&phalanxv1.ServeLogsRequest{Id: id, Error: fmt.Sprintf("reading %s on %s: %v", path, a.cfg.Name, err)})
				return
			}
		}
		if !running {
			if req.GetRemove() && !a.runsTask(req.GetJob().GetId(), int(req.GetRank())) {
				a.removeLog(req, path)
			}
			r := &phalanxv1.ServeLogsRequest{Id: id, Eof: true}
			if first {
				r.Path = path
			}
			send(r)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-a.cfg.Clock.After(logPoll):
		}
	}
}

// openLog opens the file a read asks for, as the job's user (a user reads
// through phx logs only what they could read here themselves), positioned
// at the read's offset.
func (a *Agent) openLog(req *phalanxv1.LogRead) (*os.File, string, error) {
	job := jobFromWire(req.GetJob())
	rank := int(req.GetRank())
	if rank < 0 || rank >= len(job.ranks) || job.ranks[rank].node != a.cfg.Name {
		return nil, "", fmt.Errorf("job %d has no rank %d on node %s", job.id, rank, a.cfg.Name)
	}
	stdout, stderr := cluster.OutputPaths(job.output, job.errPattern, job.workDir, cluster.OutputVars{
		Array: job.array, JobID: job.id, Name: job.name, User: job.user, Node: a.cfg.Name, Rank: rank,
	})
	path := stdout
	if req.GetStderr() {
		path = stderr
	}
	var f *os.File
	err := runtime.AsUser(idOrKeep(job.uid), idOrKeep(job.gid), func() error {
		var err error
		f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO must not block the agent
		return err
	})
	if err != nil {
		return nil, path, fmt.Errorf("job %d's output on %s: %w", job.id, a.cfg.Name, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err == nil {
		off := req.GetOffset()
		if off < 0 {
			off = max(0, fi.Size()+off)
		}
		_, err = f.Seek(off, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, path, fmt.Errorf("job %d's output on %s: %w", job.id, a.cfg.Name, err)
	}
	return f, path, nil
}

// removeLog deletes a file read to its end, as the job's user (it may
// delete only what that user may).
func (a *Agent) removeLog(req *phalanxv1.LogRead, path string) {
	job := jobFromWire(req.GetJob())
	err := runtime.AsUser(idOrKeep(job.uid), idOrKeep(job.gid), func() error { return os.Remove(path) })
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		a.log.Warn("removing a read output file", "job", job.id, "path", path, "err", err)
	}
}

// runsTask reports whether a task of the job's rank runs on this node.
func (a *Agent) runsTask(job uint64, rank int) bool {
	_, ok := a.runningTask(job, rank)
	return ok
}
