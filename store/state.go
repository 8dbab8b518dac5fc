package store

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// Controller is one replica as the replicated state records it: its Raft
// ID and where to reach its API and Raft transport.
type Controller struct {
	ID       string
	APIAddr  string
	RaftAddr string
}

// request is a client request already seen: the job a submit created, or
// the jobs a cancel cancelled, and when.
type request struct {
	job       cluster.JobID
	cancelled []cluster.JobID
	time      int64 // Unix ns, the job's submit time or the cancel's
}

// cancelKey is where a cancel request is remembered: apart from submit
// requests, so that the same client ID used for both cannot make one read
// the other's record. Request IDs hold no NUL (the API refuses them).
func cancelKey(requestID []byte) string { return "cancel\x00" + string(requestID) }

// signalKey is where a scancel --signal request is remembered, beside the
// cancels.
func signalKey(requestID []byte) string { return "signal\x00" + string(requestID) }

// updateKey is where an update request is remembered: by job too, so
// that one request ID may update several jobs (scontrol update JobId=7,8).
func updateKey(id cluster.JobID, requestID []byte) string {
	return "update\x00" + strconv.FormatUint(uint64(id), 10) + "\x00" + string(requestID)
}

// state is the in-memory copy of the store (see the package documentation).
// Values reachable from it are immutable: changes replace pointers.
type state struct {
	applied uint64
	nextJob cluster.JobID

	jobs   map[cluster.JobID]*cluster.Job // active jobs, without script and environment
	active []*cluster.Job                 // the same, by ID
	// finished holds the end time (Unix ns) of every job in history, by ID.
	finished map[cluster.JobID]int64

	// configVersion counts changes to nodes and partitions: what a job's
	// feasibility depends on.
	configVersion uint64
	nodes         map[string]*cluster.Node
	nodeList      []*cluster.Node      // by name; replaced on change, never changed in place
	parts         []*cluster.Partition // replaced on change, never changed in place
	// partsConfig is the digest of the config file's partitions as last
	// applied; administrators' changes since are in parts, not in it.
	partsConfig string
	// features is the state's feature level (features.go).
	features   uint64
	requests   map[string]request
	ctls       map[string]Controller
	liveOnNode map[string]map[cluster.JobID]struct{} // live jobs with a task on the node
	// nextEvent is the number the next node event takes; events holds the
	// number and time of every event kept, in order (the events
	// themselves are on disk only).
	nextEvent uint64
	events    []eventStamp
	// unqueued holds the active jobs outside the plain queue: not pending
	// (they hold, or are about to release, resources), or pending after a
	// requeue. Every scheduling pass must see them; see QueueState.
	unqueued map[cluster.JobID]*cluster.Job
	// arrays counts, by array, the tasks stored (active or finished): the
	// array's shared payload, under its ID, goes with the last of them.
	// arrayOf is each stored task's array.
	arrays  map[cluster.JobID]int
	arrayOf map[cluster.JobID]cluster.JobID
	// held and usage are fair share's past (usage.go): what each released
	// attempt of a stored job held, by job, and its sum by group.
	held     map[cluster.JobID][]heldRecord
	usage    map[cluster.ShareGroup]groupUsage
	halfLife time.Duration // of usage; 0: no decay
}

func newState(halfLife time.Duration) *state {
	return &state{
		halfLife:   max(halfLife, 0),
		usage:      map[cluster.ShareGroup]groupUsage{},
		nextJob:    1,
		nextEvent:  1,
		jobs:       map[cluster.JobID]*cluster.Job{},
		finished:   map[cluster.JobID]int64{},
		nodes:      map[string]*cluster.Node{},
		requests:   map[string]request{},
		ctls:       map[string]Controller{},
		liveOnNode: map[string]map[cluster.JobID]struct{}{},
		unqueued:   map[cluster.JobID]*cluster.Job{},
		arrays:     map[cluster.JobID]int{},
		arrayOf:    map[cluster.JobID]cluster.JobID{},
		held:       map[cluster.JobID][]heldRecord{},
	}
}

// addArrayTask counts task id of array base as stored.
func (st *state) addArrayTask(id, base cluster.JobID) {
	st.arrayOf[id] = base
	st.arrays[base]++
}

// forgetArrayTask forgets a stored job, and returns the payload that goes
// with it: its own, the array's once its last task goes, else none (0).
func (st *state) forgetArrayTask(id cluster.JobID) (payload cluster.JobID) {
	base, ok := st.arrayOf[id]
	if !ok {
		return id
	}
	delete(st.arrayOf, id)
	if st.arrays[base]--; st.arrays[base] > 0 {
		return 0
	}
	delete(st.arrays, base)
	return base
}

// isActive reports whether a job belongs in the active set: not terminal,
// or still holding resources.
func isActive(j *cluster.Job) bool { return !j.State.Terminal() || j.Live() }

// change is one command being applied: it changes the state and records the
// ops for the writer and the nodes whose assignments changed.
type change struct {
	st       *state
	idx      uint64
	ops      []op
	touched  map[string]struct{}
	payloads []putPayloadOp // submitted by this command: unflushed until the writer commits them
}

func (c *change) touch(node string) {
	if c.touched == nil {
		c.touched = map[string]struct{}{}
	}
	c.touched[node] = struct{}{}
}

func (c *change) touchAlloc(j *cluster.Job) {
	if j == nil || j.Alloc == nil {
		return
	}
	for _, n := range j.Alloc.Nodes {
		c.touch(n.Node)
	}
}

// job returns an active job; nil if it is not active.
func (c *change) job(id cluster.JobID) *cluster.Job { return c.st.jobs[id] }

// known reports whether a job with the ID was ever submitted and not yet
// forgotten.
func (c *change) known(id cluster.JobID) bool {
	if _, ok := c.st.jobs[id]; ok {
		return true
	}
	_, ok := c.st.finished[id]
	return ok
}

// putJob stores j, a new value (never one already stored): in the active
// set while it is active, else in history. It stamps the Raft index on the
// attempt records it opens or closes.
func (c *change) putJob(j *cluster.Job) {
	st := c.st
	old := st.jobs[j.ID]
	c.stampAttempts(old, j)
	if c.st.has(FeatureRequeueEvents) {
		c.requeued(old, j)
	}
	c.touchAlloc(old)
	c.touchAlloc(j)
	st.unindexLive(old)
	delete(st.unqueued, j.ID)
	if isActive(j) {
		st.jobs[j.ID] = j
		st.active = upsert(st.active, j, jobID)
		st.indexLive(j)
	} else {
		delete(st.jobs, j.ID)
		st.active = remove(st.active, j.ID, jobID)
		st.finished[j.ID] = codec.Time(j.EndTime)
	}
	c.ops = append(c.ops, putJobOp{j: j})
}

// stampAttempts sets the Raft index on the attempt records this change
// opened (placed) or closed (released), comparing j with its old value.
func (c *change) stampAttempts(old, j *cluster.Job) {
	var before []cluster.Attempt
	if old != nil {
		before = old.Attempts
	}
	for i := range j.Attempts {
		a := &j.Attempts[i]
		if i >= len(before) {
			a.PlacedIndex = c.idx
		}
		if a.Released() && (i >= len(before) || !before[i].Released()) {
			a.ReleasedIndex = c.idx
			c.st.recordHeld(j, a)
		}
	}
}

// requeued records the event of a job this change sent back to the queue
// (old, its value before, had an earlier attempt): every requeue and
// restart comes through here, once, whatever caused it.
func (c *change) requeued(old, j *cluster.Job) {
	if old == nil || j.Attempt <= old.Attempt {
		return
	}
	var fault *cluster.Node
	if n := len(j.Attempts); n > 0 {
		fault = c.st.nodes[j.Attempts[n-1].FaultNode]
	}
	c.event(cluster.RequeuedEvent(j, fault))
}

// indexLive adds an active job to the indexes of live and unqueued jobs.
func (st *state) indexLive(j *cluster.Job) {
	if j == nil {
		return
	}
	if j.State != cluster.JobPending || j.Requeued {
		st.unqueued[j.ID] = j
	}
	if !j.Live() {
		return
	}
	for _, n := range j.Alloc.Nodes {
		set := st.liveOnNode[n.Node]
		if set == nil {
			set = map[cluster.JobID]struct{}{}
			st.liveOnNode[n.Node] = set
		}
		set[j.ID] = struct{}{}
	}
}

func (st *state) unindexLive(j *cluster.Job) {
	if j == nil || j.Alloc == nil {
		return
	}
	for _, n := range j.Alloc.Nodes {
		if set := st.liveOnNode[n.Node]; set != nil {
			delete(set, j.ID)
			if len(set) == 0 {
				delete(st.liveOnNode, n.Node)
			}
		}
	}
}

// putNode stores n, a new value. The node list is replaced, not changed
// in place: readers share it without copying (nodes change rarely).
// putNode stores n, a new value (never the stored one, changed in place).
// A state or state time that differs from the stored node's is a state
// change of this entry (StateIndex); otherwise the stored StateIndex
// stays.
func (c *change) putNode(n *cluster.Node) {
	if old := c.st.nodes[n.Name]; old != nil && old.State == n.State && old.StateTime.Equal(n.StateTime) {
		n.StateIndex = old.StateIndex
	} else {
		n.StateIndex = c.idx
	}
	c.st.nodes[n.Name] = n
	c.st.configVersion++
	c.st.nodeList = upsert(slices.Clone(c.st.nodeList), n, nodeName)
	c.touch(n.Name)
	c.ops = append(c.ops, putNodeOp{n: n})
}

func jobID(j *cluster.Job) cluster.JobID { return j.ID }
func nodeName(n *cluster.Node) string    { return n.Name }

// upsert puts v into list, sorted by key, replacing the value with the same
// key.
func upsert[T any, K cmp.Ordered](list []T, v T, key func(T) K) []T {
	k := key(v)
	i, found := slices.BinarySearchFunc(list, k, func(e T, k K) int { return cmp.Compare(key(e), k) })
	if found {
		list[i] = v
		return list
	}
	return slices.Insert(list, i, v)
}

// remove drops the value with key k from list, sorted by key.
func remove[T any, K cmp.Ordered](list []T, k K, key func(T) K) []T {
	i, found := slices.BinarySearchFunc(list, k, func(e T, k K) int { return cmp.Compare(key(e), k) })
	if !found {
		return list
	}
	return slices.Delete(list, i, i+1)
}
