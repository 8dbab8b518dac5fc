package store

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"

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
// above after (submitted since), those requeued, and those that jobs are
// being (or were last) preempted for, so that the scheduler keeps what
// their victims free for them; every other active job is in it too. It is
// in ID order, like State's.
func (s *Store) QueueState(head []cluster.JobID, after cluster.JobID) (*State, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	i, _ := slices.BinarySearchFunc(s.st.active, after+1, func(j *cluster.Job, id cluster.JobID) int { return cmp.Compare(j.ID, id) })
	newer := s.st.active[i:]
	jobs := make([]*cluster.Job, 0, len(s.st.unqueued)+len(head)+len(newer))
	in := map[cluster.JobID]bool{}
	add := func(id cluster.JobID) { // a pending job not in unqueued or newer
		if j := s.st.jobs[id]; j != nil && id <= after && j.State == cluster.JobPending && !j.Requeued && !in[id] {
			in[id] = true
			jobs = append(jobs, j)
		}
	}
	for _, j := range s.st.unqueued {
		if j.ID <= after {
			jobs = append(jobs, j)
		}
	}
	for _, j := range s.st.unqueued { // victims (leaving, or requeued) name their preemptors
		if n := len(j.Attempts); n > 0 && j.Attempts[n-1].PreemptedFor.Job != 0 {
			add(j.Attempts[n-1].PreemptedFor.Job)
		}
	}
	for _, id := range head {
		add(id)
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

// RequestCancelled returns the jobs a cancel request cancelled, if the
// request is remembered.
func (s *Store) RequestCancelled(requestID []byte) ([]cluster.JobID, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.st.requests[cancelKey(requestID)]
	return slices.Clone(r.cancelled), ok
}

// RequestUpdated reports whether an update request of job id is
// remembered: it was applied.
func (s *Store) RequestUpdated(id cluster.JobID, requestID []byte) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.st.requests[updateKey(id, requestID)]
	return ok
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
		return codec.DecodePayload(j, tx.Bucket(bucketPayloads).Get(jobKey(j.PayloadID())))
	})
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	if j == nil { // forgotten meanwhile
		return nil, fmt.Errorf("job %d: %w", id, cluster.ErrNotFound)
	}
	return j, nil
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

// PartitionsConfig is the digest of the config file's partitions as last
// applied ("" before any was recorded).
func (s *Store) PartitionsConfig() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.partsConfig
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
	payload, err := s.payload(j.PayloadID())
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
