package controller

import (
	"slices"
	"strconv"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

// Listing jobs: what a ListJobsRequest (squeue, sacct) asks of the store.

// listQuery reads a ListJobsRequest into a store query and the test its
// jobs must pass. now and minJobAge decide which finished jobs a listing
// that is not history still shows.
func listQuery(req *phalanxv1.ListJobsRequest, now time.Time, minJobAge time.Duration) (store.JobQuery, error) {
	q, err := pageQuery(req.PageSize, req.PageToken)
	if err != nil {
		return q, err
	}
	for _, id := range req.JobIds {
		q.IDs = append(q.IDs, cluster.JobID(id))
	}
	q.Finished = req.IncludeFinished || req.History || len(req.JobIds) > 0
	if !req.History {
		q.EndedAfter = now.Add(-minJobAge)
	}
	win, windowed := requestWindow(req, now)
	switch {
	case windowed && win.end.Before(win.start):
		return q, cluster.Errorf(cluster.ErrInvalid, "the window ends (%s) before it starts (%s)", win.end.Format(time.RFC3339), win.start.Format(time.RFC3339))
	case windowed && win.start.After(q.EndedAfter): // a job that ended before the window cannot match
		q.EndedAfter = win.start
	}
	finished := q.Finished
	q.Match = func(j *cluster.Job) bool {
		switch {
		case !finished && !j.InQueue() && !j.Completing(), !matchJob(j, req):
			return false
		case windowed:
			return win.match(j, req.States)
		}
		return len(req.States) == 0 || slices.Contains(req.States, string(j.State)) ||
			j.Completing() && slices.Contains(req.States, string(cluster.JobCompleting))
	}
	return q, nil
}

// pageQuery reads a page size and token into a job query.
func pageQuery(size int32, token string) (store.JobQuery, error) {
	q := store.JobQuery{Limit: defaultPageSize}
	switch {
	case size < 0:
		return q, cluster.Errorf(cluster.ErrInvalid, "page size %d must not be negative", size)
	case size > 0:
		q.Limit = min(int(size), maxPageSize)
	}
	if token != "" {
		after, err := strconv.ParseUint(token, 10, 64)
		if err != nil {
			return q, cluster.Errorf(cluster.ErrInvalid, "page token %q is not one this server gave", token)
		}
		q.After = cluster.JobID(after)
	}
	return q, nil
}

// matchJob applies a request's user, partition and name filters (the
// store looks job IDs up; states depend on the window).
func matchJob(j *cluster.Job, req *phalanxv1.ListJobsRequest) bool {
	return (len(req.Users) == 0 || slices.Contains(req.Users, j.User)) &&
		(len(req.Partitions) == 0 || slices.Contains(req.Partitions, j.Partition)) &&
		(len(req.Names) == 0 || slices.Contains(req.Names, j.Name))
}

// window is the time window of an accounting listing (sacct -S, -E).
type window struct{ start, end time.Time }

// requestWindow is the request's window, if it has one: an unset start
// is the beginning of time, an unset end is now.
func requestWindow(req *phalanxv1.ListJobsRequest, now time.Time) (window, bool) {
	if req.WindowStart == nil && req.WindowEnd == nil {
		return window{}, false
	}
	w := window{end: now}
	if req.WindowStart != nil {
		w.start = req.WindowStart.AsTime()
	}
	if req.WindowEnd != nil {
		w.end = req.WindowEnd.AsTime()
	}
	return w, true
}

// match reports whether j was submitted by the end of the window and, with
// no states, had not ended before its start; with states, whether it was
// in one of them during the window (see ListJobsRequest).
func (w window) match(j *cluster.Job, states []string) bool {
	if j.SubmitTime.After(w.end) {
		return false
	}
	if len(states) == 0 {
		return !j.State.Terminal() || !j.EndTime.Before(w.start)
	}
	for _, s := range states {
		if w.was(j, cluster.JobState(s)) {
			return true
		}
	}
	return false
}

func (w window) was(j *cluster.Job, st cluster.JobState) bool {
	switch {
	case st == cluster.JobPending: // waiting at the start or later
		if j.State == cluster.JobPending {
			return true
		}
		if len(j.Attempts) > 0 {
			return !j.Attempts[0].StartTime.Before(w.start)
		}
		return !j.EndTime.Before(w.start) // ended without ever starting
	case st == cluster.JobRunning: // an attempt overlaps the window
		for _, a := range j.Attempts {
			if !a.StartTime.After(w.end) && (a.EndTime.IsZero() || !a.EndTime.Before(w.start)) {
				return true
			}
		}
		return false
	case st.Terminal():
		return j.State == st && !j.EndTime.Before(w.start) && !j.EndTime.After(w.end)
	}
	return j.State == st
}
