package sim

import (
	"container/heap"
	"time"
)

// eventKind says what happens at an event.
type eventKind int

const (
	evArrive  eventKind = iota // a job is submitted
	evEnd                      // a job's attempt reaches its duration or time limit
	evRequeue                  // a preemption victim's grace period is over
	evFail                     // a node fails
	evRepair                   // a failed node is back
	evTick                     // the periodic scheduling pass (Config.IdlePasses)
	evWake                     // a pending job's --switches wait expires
)

// event is one entry of the queue. attempt ties evEnd and evRequeue to the
// attempt they were made for: a stale event (the job was requeued or ended
// since) is ignored.
type event struct {
	at      time.Time
	seq     uint64 // insertion order: ties at the same time keep it
	kind    eventKind
	job     *simJob
	attempt int
	node    int
}

// eventQueue is a min-heap by (at, seq).
type eventQueue struct {
	items []event
	seq   uint64
}

func (q *eventQueue) Len() int { return len(q.items) }
func (q *eventQueue) Less(i, j int) bool {
	a, b := &q.items[i], &q.items[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
}
func (q *eventQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *eventQueue) Push(x any)    { q.items = append(q.items, x.(event)) }
func (q *eventQueue) Pop() any {
	e := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return e
}

func (q *eventQueue) push(e event) {
	q.seq++
	e.seq = q.seq
	heap.Push(q, e)
}

func (q *eventQueue) pop() event { return heap.Pop(q).(event) }

// next returns the time of the earliest event; ok is false when empty.
func (q *eventQueue) next() (time.Time, bool) {
	if len(q.items) == 0 {
		return time.Time{}, false
	}
	return q.items[0].at, true
}

// jobSet is an unordered set of jobs with O(1) add and remove; each job
// keeps its slot. Iteration order depends only on the sequence of adds and
// removes, so it is deterministic.
type jobSet struct {
	items []*simJob
	slot  func(*simJob) *int
}

func (s *jobSet) add(j *simJob) {
	*s.slot(j) = len(s.items)
	s.items = append(s.items, j)
}

func (s *jobSet) remove(j *simJob) {
	i := *s.slot(j)
	last := s.items[len(s.items)-1]
	s.items[i] = last
	*s.slot(last) = i
	s.items = s.items[:len(s.items)-1]
	*s.slot(j) = -1
}

func (s *jobSet) len() int { return len(s.items) }
