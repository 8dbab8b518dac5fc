package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// Everything returned here, slices included, is shared with the store and
// with other readers: read it, never modify it (Clone first).

// State is a consistent view of everything the scheduler needs.
type State struct {
	Applied       uint64               // the index it reflects
	ConfigVersion uint64               // changes whenever a node or partition does
	Nodes         []*cluster.Node      // by name
	Partitions    []*cluster.Partition // in configuration order
	Active        []*cluster.Job       // pending and live jobs, by ID
}

// State returns nodes, partitions and active jobs as of one applied index.
func (s *Store) State() (*State, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	return &State{
		Applied:       s.st.applied,
		ConfigVersion: s.st.configVersion,
		Nodes:         s.st.nodeList, // replaced on change, never changed in place
		Partitions:    s.st.parts,
		Active:        slices.Clone(s.st.active),
	}, nil
}

// QueueState is State for a quick scheduling pass, at a cost that grows
// with the jobs holding resources and the jobs new to the queue, not with
// the queue: of the pending jobs, Active holds only those in head, those
// above after (submitted since), and those requeued; every other active
// job is in it too. It is in ID order, like State's.
func (s *Store) QueueState(head []cluster.JobID, after cluster.JobID) (*State, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	i, _ := slices.BinarySearchFunc(s.st.active, after+1, func(j *cluster.Job, id cluster.JobID) int { return cmp.Compare(j.ID, id) })
	newer := s.st.active[i:]
	jobs := make([]*cluster.Job, 0, len(s.st.unqueued)+len(head)+len(newer))
	for _, j := range s.st.unqueued {
		if j.ID <= after {
			jobs = append(jobs, j)
		}
	}
	for _, id := range head {
		if j := s.st.jobs[id]; j != nil && id <= after && j.State == cluster.JobPending && !j.Requeued {
			jobs = append(jobs, j)
		}
	}
	slices.SortFunc(jobs, func(a, b *cluster.Job) int { return cmp.Compare(a.ID, b.ID) })
	return &State{
		Applied:       s.st.applied,
		ConfigVersion: s.st.configVersion,
		Nodes:         s.st.nodeList,
		Partitions:    s.st.parts,
		Active:        append(jobs, newer...),
	}, nil
}

// Config returns the nodes and partitions, without the jobs (Active is
// nil): what admission needs, at a cost that does not grow with the queue.
func (s *Store) Config() *State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &State{Applied: s.st.applied, ConfigVersion: s.st.configVersion, Nodes: s.st.nodeList, Partitions: s.st.parts}
}

// ActiveJobs returns the jobs that have not ended or still hold resources,
// by ID.
func (s *Store) ActiveJobs() []*cluster.Job {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.st.active)
}

// NextJobID is the smallest ID above every submitted job: 1 on an empty
// store. The leader hands out IDs from it; they are chosen before the
// SubmitJob command is proposed.
func (s *Store) NextJobID() cluster.JobID {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.nextJob
}

// RequestJob returns the job a submit request created, if the request is
// remembered.
func (s *Store) RequestJob(requestID []byte) (cluster.JobID, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.st.requests[string(requestID)]
	return r.job, ok
}

// Counts returns how many jobs are active and how many finished jobs and
// submit requests are remembered.
func (s *Store) Counts() (active, finished, requests int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.st.jobs), len(s.st.finished), len(s.st.requests)
}

// Job returns one job, active or finished, with its script and
// environment (decoded for the call: the result is the caller's);
// ErrNotFound if there is none.
func (s *Store) Job(id cluster.JobID) (*cluster.Job, error) { return s.lookup(id, true) }

// JobRecord returns one job, active or finished, without its script and
// environment; ErrNotFound if there is none.
func (s *Store) JobRecord(id cluster.JobID) (*cluster.Job, error) { return s.lookup(id, false) }

func (s *Store) lookup(id cluster.JobID, withPayload bool) (*cluster.Job, error) {
	s.mu.RLock()
	j, closed := s.st.jobs[id], s.closed
	_, finished := s.st.finished[id]
	s.mu.RUnlock()
	switch {
	case closed:
		return nil, ErrClosed
	case j != nil && !withPayload:
		return j, nil
	case j != nil:
		return s.WithPayload(j)
	case !finished:
		return nil, fmt.Errorf("job %d: %w", id, cluster.ErrNotFound)
	}
	err := s.view(func(tx *bolt.Tx) error {
		var r statev1.Job
		ok, err := getProto(tx.Bucket(bucketHistory), jobKey(id), &r)
		if err != nil || !ok {
			return err
		}
		if j, err = codec.FromJob(&r); err != nil || !withPayload {
			return err
		}
		return codec.DecodePayload(j, tx.Bucket(bucketPayloads).Get(jobKey(id)))
	})
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	if j == nil { // forgotten meanwhile
		return nil, fmt.Errorf("job %d: %w", id, cluster.ErrNotFound)
	}
	return j, nil
}

// JobQuery selects a page of jobs, in ID order.
type JobQuery struct {
	// After: only jobs with a higher ID (0: from the start).
	After cluster.JobID
	// Limit: at most this many (0: no limit).
	Limit int
	// Finished includes finished jobs (read from disk). Without it only
	// active jobs are listed.
	Finished bool
	// EndedAfter, with Finished, limits finished jobs to those that ended
	// at or after it (zero: all). They are picked in memory; only they are
	// read from disk.
	EndedAfter time.Time
	// Match, when set, selects the jobs to return.
	Match func(*cluster.Job) bool
}

// Jobs returns one page of the jobs q selects and the ID to continue after
// (0 when there are no more). Finished jobs come without their script and
// environment.
func (s *Store) Jobs(q JobQuery) ([]*cluster.Job, cluster.JobID, error) {
	s.mu.RLock()
	active, closed := slices.Clone(s.st.active), s.closed
	var recent []cluster.JobID // finished after q.EndedAfter, when it is set
	if q.Finished && !q.EndedAfter.IsZero() {
		cut := codec.Time(q.EndedAfter)
		for id, end := range s.st.finished {
			if end >= cut && id > q.After {
				recent = append(recent, id)
			}
		}
	}
	s.mu.RUnlock()
	if closed {
		return nil, 0, ErrClosed
	}
	i := sort.Search(len(active), func(i int) bool { return active[i].ID > q.After })
	active = active[i:]
	p := page{q: q}
	if !q.Finished {
		for _, j := range active {
			if !p.add(j) {
				break
			}
		}
		return p.out, p.next(), nil
	}
	var hist historyCursor
	if q.EndedAfter.IsZero() {
		hist = &scanCursor{after: q.After}
	} else {
		slices.Sort(recent)
		hist = &listCursor{ids: recent}
	}
	err := s.view(func(tx *bolt.Tx) error {
		cur := hist.open(tx.Bucket(bucketHistory))
		k, v := cur.first()
		for k != nil || len(active) > 0 {
			var hid cluster.JobID
			if k != nil {
				hid = cluster.JobID(binary.BigEndian.Uint64(k))
			}
			if len(active) > 0 && (k == nil || active[0].ID <= hid) {
				if k != nil && active[0].ID == hid { // finished since the copy: memory's copy is as valid
					k, v = cur.next()
				}
				j := active[0]
				active = active[1:]
				if !p.add(j) {
					return nil
				}
				continue
			}
			var r statev1.Job
			if err := unmarshal(v, &r); err != nil {
				return fmt.Errorf("finished job %d: %w", hid, err)
			}
			j, err := codec.FromJob(&r)
			if err != nil {
				return fmt.Errorf("finished job %d: %w", hid, err)
			}
			if !p.add(j) {
				return nil
			}
			k, v = cur.next()
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return p.out, p.next(), nil
}

// historyCursor walks finished jobs in ID order: every one after an ID, or
// those of a list.
type historyCursor interface {
	open(b *bolt.Bucket) historyCursor
	first() (k, v []byte)
	next() (k, v []byte)
}

type scanCursor struct {
	after cluster.JobID
	cur   *bolt.Cursor
}

func (c *scanCursor) open(b *bolt.Bucket) historyCursor { c.cur = b.Cursor(); return c }
func (c *scanCursor) first() ([]byte, []byte)           { return c.cur.Seek(jobKey(c.after + 1)) }
func (c *scanCursor) next() ([]byte, []byte)            { return c.cur.Next() }

type listCursor struct {
	ids []cluster.JobID
	b   *bolt.Bucket
}

func (c *listCursor) open(b *bolt.Bucket) historyCursor { c.b = b; return c }
func (c *listCursor) first() ([]byte, []byte)           { return c.next() }

// next returns the next listed job still on disk (one may have been
// forgotten since the list was made).
func (c *listCursor) next() ([]byte, []byte) {
	for len(c.ids) > 0 {
		k := jobKey(c.ids[0])
		c.ids = c.ids[1:]
		if v := c.b.Get(k); v != nil {
			return k, v
		}
	}
	return nil, nil
}

// page collects the jobs of one Jobs call.
type page struct {
	q    JobQuery
	out  []*cluster.Job
	full bool
}

// add adds j if it matches and reports whether there is room for more.
func (p *page) add(j *cluster.Job) bool {
	if p.q.Match != nil && !p.q.Match(j) {
		return true
	}
	if p.q.Limit > 0 && len(p.out) == p.q.Limit {
		p.full = true
		return false
	}
	p.out = append(p.out, j)
	return true
}

// next is the ID to continue after: the last one returned when more jobs
// matched than fit.
func (p *page) next() cluster.JobID {
	if !p.full || len(p.out) == 0 {
		return 0
	}
	return p.out[len(p.out)-1].ID
}

// Nodes returns every node, by name.
func (s *Store) Nodes() []*cluster.Node {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.nodeList
}

// Node returns one node; ErrNotFound if there is none.
func (s *Store) Node(name string) (*cluster.Node, error) {
	s.mu.RLock()
	n := s.st.nodes[name]
	s.mu.RUnlock()
	if n == nil {
		return nil, fmt.Errorf("node %q: %w", name, cluster.ErrNotFound)
	}
	return n, nil
}

// Partitions returns every partition, in configuration order.
func (s *Store) Partitions() []*cluster.Partition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.parts
}

// WithPayload returns a copy of a job with its script and environment
// (what launching or showing it needs).
func (s *Store) WithPayload(j *cluster.Job) (*cluster.Job, error) {
	payload, err := s.payload(j.ID)
	if err != nil {
		return nil, err
	}
	full := *j
	return &full, codec.DecodePayload(&full, payload)
}

// payload returns a job's encoded payload: from memory until the writer has
// committed it, from disk afterwards (nil when there is none).
func (s *Store) payload(id cluster.JobID) ([]byte, error) {
	s.pmu.Lock()
	p, ok := s.unflushed[id]
	s.pmu.Unlock()
	if ok {
		return p, nil
	}
	err := s.withDB(func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error {
			p = bytes.Clone(tx.Bucket(bucketPayloads).Get(jobKey(id)))
			return nil
		})
	})
	return p, err
}

// NodeJobs returns the live jobs with a task on the node, by ID, without
// their scripts and environments (WithPayload adds them), and a channel
// closed at the next change to them or to the node.
func (s *Store) NodeJobs(node string) ([]*cluster.Job, <-chan struct{}) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	jobs := make([]*cluster.Job, 0, len(s.st.liveOnNode[node]))
	for id := range s.st.liveOnNode[node] {
		jobs = append(jobs, s.st.jobs[id])
	}
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].ID < jobs[k].ID })
	s.wmu.Lock()
	defer s.wmu.Unlock()
	ch, ok := s.watches[node]
	if !ok {
		ch = make(chan struct{})
		if s.closed {
			close(ch)
		} else {
			s.watches[node] = ch
		}
	}
	return jobs, ch
}
