package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// Node events (cluster.Event) live on disk only, in events/ under their
// sequence number. Memory keeps each one's number and time, in order, for
// retention and to find where a listing since a time starts.

// eventStamp is what memory keeps of an event.
type eventStamp struct {
	seq  uint64
	time int64 // Unix ns
}

// event records e, caused by the command being applied: it takes the next
// sequence number and is written with the command's other changes.
func (c *change) event(e cluster.Event) {
	e.Seq = c.st.nextEvent
	c.st.nextEvent++
	c.st.events = append(c.st.events, eventStamp{seq: e.Seq, time: codec.Time(e.Time)})
	c.ops = append(c.ops, putEventOp{e: e})
}

// expireEvents forgets the events from before r.EventsBefore, and the
// oldest (the lowest numbered) beyond r.MaxEvents.
func (c *change) expireEvents(r Retention) {
	if r.EventsBefore.IsZero() && r.MaxEvents <= 0 {
		return
	}
	cut := codec.Time(r.EventsBefore)
	drop := 0
	if r.MaxEvents > 0 && len(c.st.events) > r.MaxEvents {
		drop = len(c.st.events) - r.MaxEvents
	}
	var kept []eventStamp
	for i, e := range c.st.events {
		if i < drop || !r.EventsBefore.IsZero() && e.time < cut {
			c.ops = append(c.ops, deleteOp{bucket: bucketEvents, key: u64(e.seq)})
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) < len(c.st.events) {
		c.st.events = kept
	}
}

// EventQuery selects node events.
type EventQuery struct {
	// Nodes and Jobs: only these nodes' and jobs' events (both empty:
	// every event).
	Nodes []string
	Jobs  []cluster.JobID
	// Since: only events at or after this time (zero: all).
	Since time.Time
	// After: only events numbered above this (where a page ended; 0: from
	// the first).
	After uint64
	// Limit: at most this many, the first ones (0: no limit).
	Limit int
}

// Events returns the events q selects, oldest (lowest numbered) first.
func (s *Store) Events(q EventQuery) ([]cluster.Event, error) {
	if q.After == math.MaxUint64 {
		return nil, nil
	}
	from := q.After + 1
	if !q.Since.IsZero() {
		from = max(from, s.firstEventSince(codec.Time(q.Since)))
	}
	var out []cluster.Event
	err := s.view(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bucketEvents).Cursor()
		for k, v := cur.Seek(u64(from)); k != nil; k, v = cur.Next() {
			var r statev1.Event
			if err := unmarshal(v, &r); err != nil {
				return fmt.Errorf("event %d: %w", binary.BigEndian.Uint64(k), err)
			}
			e, err := codec.FromEvent(&r)
			if err != nil {
				return fmt.Errorf("event %d: %w", binary.BigEndian.Uint64(k), err)
			}
			if e.Time.Before(q.Since) || !q.selects(e) {
				continue
			}
			out = append(out, e)
			if len(out) == q.Limit {
				return nil
			}
		}
		return nil
	})
	return out, err
}

// firstEventSince is the number of the first event at or after t (in
// Unix ns): every event numbered below it is older. Above it, times may
// still go back a little (the leader's clock when it was proposed).
func (s *Store) firstEventSince(t int64) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.st.events {
		if e.time >= t {
			return e.seq
		}
	}
	return s.st.nextEvent
}

// putEventOp writes an event's record.
type putEventOp struct{ e cluster.Event }

func (o putEventOp) write(tx *bolt.Tx) error {
	r, err := codec.Event(o.e)
	if err != nil {
		return fmt.Errorf("encode event %d: %w", o.e.Seq, err)
	}
	return putProto(tx.Bucket(bucketEvents), u64(o.e.Seq), r)
}

type nextEventOp struct{ next uint64 }

func (o nextEventOp) write(tx *bolt.Tx) error {
	return putUint64(tx.Bucket(bucketMeta), keyNextEvent, o.next)
}

// loadEvents reads the numbers and times of the events, and the number
// the next one takes.
func loadEvents(tx *bolt.Tx, st *state) error {
	st.nextEvent = max(getUint64(tx.Bucket(bucketMeta), keyNextEvent), 1)
	return tx.Bucket(bucketEvents).ForEach(func(k, v []byte) error {
		seq := binary.BigEndian.Uint64(k)
		var r statev1.Event
		if err := unmarshal(v, &r); err != nil {
			return fmt.Errorf("event %d: %w", seq, err)
		}
		if r.GetSeq() != seq || seq >= st.nextEvent {
			return fmt.Errorf("event under key %d has number %d (the next is %d)", seq, r.GetSeq(), st.nextEvent)
		}
		st.events = append(st.events, eventStamp{seq: seq, time: r.GetTime()}) // keys come in order
		return nil
	})
}

// selects reports whether e is of one of the query's nodes or jobs.
func (q EventQuery) selects(e cluster.Event) bool {
	if len(q.Nodes) == 0 && len(q.Jobs) == 0 {
		return true
	}
	return e.Node != "" && slices.Contains(q.Nodes, e.Node) || e.Job != 0 && slices.Contains(q.Jobs, e.Job)
}

// RecordEvent records an event an agent saw (a job's suspected hang, a
// torn checkpoint step skipped). Its number is given here.
func (s *Store) RecordEvent(idx uint64, e cluster.Event) error {
	return s.apply(idx, func(c *change) error {
		c.event(e)
		return nil
	})
}
