package store

import (
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

// JobQuery selects a page of jobs, in ID order.
type JobQuery struct {
	// After: only jobs with a higher ID (0: from the start).
	After cluster.JobID
	// Limit: at most this many (0: no limit).
	Limit int
	// IDs, when not nil, names the only jobs to consider, in any order
	// (unknown IDs are skipped): they are looked up, not searched for.
	IDs []cluster.JobID
	// Finished includes finished jobs (read from disk). Without it only
	// active jobs are listed.
	Finished bool
	// EndedAfter, with Finished, limits finished jobs to those that ended
	// at or after it (zero: all). They are picked in memory; only they are
	// read from disk.
	EndedAfter time.Time
	// Match, when set, selects the jobs to return.
	Match func(*cluster.Job) bool
	// Take, when set, is offered each selected job in turn and says
	// whether it still fits in the page: the page ends before the first
	// job it refuses (as at Limit), and the caller resumes there. It lets
	// a caller bound a page by size. It must take the first job of a page.
	Take func(*cluster.Job) bool
}

// Jobs returns one page of the jobs q selects and the ID to continue after
// (0 when there are no more). Finished jobs come without their script and
// environment.
func (s *Store) Jobs(q JobQuery) ([]*cluster.Job, cluster.JobID, error) {
	s.mu.RLock()
	active, hist := s.candidates(q)
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return nil, 0, ErrClosed
	}
	p := page{q: q}
	cut := codec.Time(q.EndedAfter)
	if hist == nil {
		for _, j := range active {
			if !p.add(j) {
				break
			}
		}
		return p.out, p.next(), nil
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
			j, err := decodeFinished(hid, v, cut)
			if err != nil {
				return err
			}
			if j != nil && !p.add(j) {
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

// decodeFinished decodes a finished job's record; nil when the job ended
// before cut (Unix ns), which a scan of the history meets.
func decodeFinished(id cluster.JobID, v []byte, cut int64) (*cluster.Job, error) {
	var r statev1.Job
	if err := unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("finished job %d: %w", id, err)
	}
	if r.GetStatus().GetEndTime() < cut {
		return nil, nil
	}
	j, err := codec.FromJob(&r)
	if err != nil {
		return nil, fmt.Errorf("finished job %d: %w", id, err)
	}
	return j, nil
}

// candidates returns, with s.mu held, the jobs a query chooses from: the
// active ones after q.After (a copy, in ID order) and, with q.Finished, a
// cursor over the finished ones (nil without).
func (s *Store) candidates(q JobQuery) ([]*cluster.Job, historyCursor) {
	var ids []cluster.JobID // q.IDs above q.After, sorted, without repeats
	for _, id := range q.IDs {
		if id > q.After {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var active []*cluster.Job
	if q.IDs == nil {
		i := sort.Search(len(s.st.active), func(i int) bool { return s.st.active[i].ID > q.After })
		active = slices.Clone(s.st.active[i:])
	}
	for _, id := range ids {
		if j := s.st.jobs[id]; j != nil {
			active = append(active, j)
		}
	}
	if !q.Finished {
		return active, nil
	}
	return active, s.history(q, ids)
}

// history picks how to walk the finished jobs q selects (ids: those it
// names). Named jobs are looked up; jobs that ended after a cut are listed
// from memory, and only they are read, unless most of them pass it: then
// sorting the list on every page would cost more than reading the few
// others, and Jobs skips those as it scans.
func (s *Store) history(q JobQuery, ids []cluster.JobID) historyCursor {
	cut, anyEnd := codec.Time(q.EndedAfter), q.EndedAfter.IsZero()
	passes := func(id cluster.JobID, end int64) bool { return id > q.After && (anyEnd || end >= cut) }
	var listed []cluster.JobID // finished, after q.After, ended at or after the cut
	if q.IDs != nil {
		for _, id := range ids {
			if end, ok := s.st.finished[id]; ok && passes(id, end) {
				listed = append(listed, id)
			}
		}
		return &listCursor{ids: listed}
	}
	after, pass := 0, 0
	for id, end := range s.st.finished {
		if id > q.After {
			after++
		}
		if passes(id, end) {
			pass++
		}
	}
	if pass*4 >= after {
		return &scanCursor{after: q.After}
	}
	listed = make([]cluster.JobID, 0, pass)
	for id, end := range s.st.finished {
		if passes(id, end) {
			listed = append(listed, id)
		}
	}
	slices.Sort(listed)
	return &listCursor{ids: listed}
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
	if (p.q.Limit > 0 && len(p.out) == p.q.Limit) || (p.q.Take != nil && !p.q.Take(j)) {
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
