package store

import (
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// maxQueuedOps bounds what the writer may lag behind memory; an apply that
// would exceed it waits (backpressure from a slow disk).
const maxQueuedOps = 1 << 16

// op is one change to bbolt, recorded by a command applied in memory and
// committed by the writer. Ops hold pointers to immutable values and encode
// them when written, off the apply path.
type op interface {
	write(tx *bolt.Tx) error
}

// entry is what one applied command leaves for the writer.
type entry struct {
	idx uint64
	ops []op
}

// writer commits applied commands to bbolt in order, as many as have
// accumulated per transaction (one fsync each), with the applied index of
// the last. It lets them accumulate for up to delay after the first one
// (group commit: on a disk shared with the Raft log, every fsync saved
// shortens the log's), unless someone waits for them (flush) or the queue
// is half full.
type writer struct {
	s     *Store
	delay time.Duration
	hurry chan struct{} // a flush is waiting: commit now

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []entry
	nops    int
	since   time.Time // when the first entry of the queue came
	urgent  bool      // a flush is waiting
	last    uint64    // highest index queued
	flushed uint64    // highest index committed
	err     error     // the first commit failure; the writer stops there
	closing bool
	done    chan struct{}
	// afterCommit, when set (tests), runs after each commit with the
	// batch's last index.
	afterCommit func(idx uint64)
}

func newWriter(s *Store, applied uint64, delay time.Duration) *writer {
	w := &writer{s: s, delay: delay, hurry: make(chan struct{}, 1), last: applied, flushed: applied, done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// room waits until the queue has room, and returns the writer's failure,
// if any.
func (w *writer) room() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.nops >= maxQueuedOps && w.err == nil && !w.closing {
		w.cond.Wait()
	}
	return w.err
}

// enqueue queues one applied command's ops; entries arrive in index order.
func (w *writer) enqueue(e entry) {
	w.mu.Lock()
	if len(w.queue) == 0 {
		w.since = time.Now()
	}
	w.queue = append(w.queue, e)
	w.nops += len(e.ops) + 1
	w.last = e.idx
	w.cond.Broadcast()
	w.mu.Unlock()
}

// flush waits until everything queued by now is committed.
func (w *writer) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.last
	if w.flushed < target {
		w.urgent = true
		select {
		case w.hurry <- struct{}{}:
		default:
		}
	}
	for w.flushed < target && w.err == nil {
		w.cond.Wait()
	}
	return w.err
}

// reset sets the indexes after the database was replaced (Restore); the
// queue is empty then.
func (w *writer) reset(applied uint64) {
	w.mu.Lock()
	w.last, w.flushed = applied, applied
	w.mu.Unlock()
}

func (w *writer) close() {
	w.mu.Lock()
	w.closing = true
	w.cond.Broadcast()
	w.mu.Unlock()
	select {
	case w.hurry <- struct{}{}:
	default:
	}
	<-w.done
}

func (w *writer) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closing {
			w.cond.Wait()
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		wait := w.delay - time.Since(w.since)
		if w.urgent || w.closing || w.nops >= maxQueuedOps/2 {
			wait = 0
		}
		w.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-w.hurry:
			}
			t.Stop()
		}
		w.mu.Lock()
		batch := w.queue
		w.queue, w.nops, w.urgent = nil, 0, false
		w.cond.Broadcast()
		w.mu.Unlock()

		err := w.s.commit(batch)
		if err == nil {
			w.s.flushedPayloads(batch)
		}
		if err == nil && w.afterCommit != nil {
			w.afterCommit(batch[len(batch)-1].idx)
		}
		w.mu.Lock()
		if err != nil {
			w.err = fmt.Errorf("write state to disk at index %d: %w", batch[len(batch)-1].idx, err)
		} else {
			w.flushed = batch[len(batch)-1].idx
		}
		w.cond.Broadcast()
		w.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// commit writes a batch of entries in one transaction.
func (s *Store) commit(batch []entry) error {
	return s.withDB(func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error {
			for _, e := range batch {
				for _, o := range e.ops {
					if err := o.write(tx); err != nil {
						return fmt.Errorf("index %d: %w", e.idx, err)
					}
				}
			}
			return putUint64(tx.Bucket(bucketMeta), keyApplied, batch[len(batch)-1].idx)
		})
	})
}

// flushedPayloads forgets the in-memory copies of the payloads a batch
// committed: they are read from disk from now on.
func (s *Store) flushedPayloads(batch []entry) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	for _, e := range batch {
		for _, o := range e.ops {
			if p, ok := o.(putPayloadOp); ok {
				delete(s.unflushed, p.id)
			}
		}
	}
}

// The ops.

// putJobOp writes a job's record: to jobs/ while it is active, else to
// history/ (and out of jobs/).
type putJobOp struct{ j *cluster.Job }

func (o putJobOp) write(tx *bolt.Tx) error {
	r, err := codec.Job(o.j)
	if err != nil {
		return fmt.Errorf("encode job %d: %w", o.j.ID, err)
	}
	key := jobKey(o.j.ID)
	if isActive(o.j) {
		return putProto(tx.Bucket(bucketJobs), key, r)
	}
	if err := tx.Bucket(bucketJobs).Delete(key); err != nil {
		return err
	}
	return putProto(tx.Bucket(bucketHistory), key, r)
}

// putPayloadOp writes a job's encoded payload as it came.
type putPayloadOp struct {
	id      cluster.JobID
	payload []byte
}

func (o putPayloadOp) write(tx *bolt.Tx) error {
	return tx.Bucket(bucketPayloads).Put(jobKey(o.id), o.payload)
}

// forgetJobOp deletes a finished job and the payload that goes with it
// (its own; its array's with the array's last task; 0: none).
type forgetJobOp struct{ id, payload cluster.JobID }

func (o forgetJobOp) write(tx *bolt.Tx) error {
	if err := tx.Bucket(bucketHistory).Delete(jobKey(o.id)); err != nil {
		return err
	}
	if o.payload == 0 {
		return nil
	}
	return tx.Bucket(bucketPayloads).Delete(jobKey(o.payload))
}

type putNodeOp struct{ n *cluster.Node }

func (o putNodeOp) write(tx *bolt.Tx) error {
	r, err := codec.Node(o.n)
	if err != nil {
		return fmt.Errorf("encode node %q: %w", o.n.Name, err)
	}
	return putProto(tx.Bucket(bucketNodes), []byte(o.n.Name), r)
}

// partitionsOp replaces every partition.
type partitionsOp struct{ ps []*cluster.Partition }

func (o partitionsOp) write(tx *bolt.Tx) error {
	if err := tx.DeleteBucket(bucketPartitions); err != nil {
		return err
	}
	b, err := tx.CreateBucket(bucketPartitions)
	if err != nil {
		return err
	}
	for i, p := range o.ps {
		r, err := codec.Partition(p)
		if err != nil {
			return fmt.Errorf("encode partition %q: %w", p.Name, err)
		}
		if err := putProto(b, seqKey(i), r); err != nil {
			return err
		}
	}
	return nil
}

type partsConfigOp struct{ digest string }

func (o partsConfigOp) write(tx *bolt.Tx) error {
	return tx.Bucket(bucketMeta).Put(keyPartsConfig, []byte(o.digest))
}

type putRequestOp struct {
	key string
	r   request
}

func (o putRequestOp) write(tx *bolt.Tx) error {
	r := &statev1.SubmitRequest{JobId: uint64(o.r.job), Time: o.r.time}
	for _, id := range o.r.cancelled {
		r.Cancelled = append(r.Cancelled, uint64(id))
	}
	return putProto(tx.Bucket(bucketRequests), []byte(o.key), r)
}

type putControllerOp struct{ c Controller }

func (o putControllerOp) write(tx *bolt.Tx) error {
	return putProto(tx.Bucket(bucketControllers), []byte(o.c.ID),
		&statev1.Controller{Id: o.c.ID, ApiAddr: o.c.APIAddr, RaftAddr: o.c.RaftAddr})
}

// deleteOp deletes one key.
type deleteOp struct{ bucket, key []byte }

func (o deleteOp) write(tx *bolt.Tx) error { return tx.Bucket(o.bucket).Delete(o.key) }

type nextJobOp struct{ next cluster.JobID }

func (o nextJobOp) write(tx *bolt.Tx) error {
	return putUint64(tx.Bucket(bucketMeta), keyNextJob, uint64(o.next))
}
