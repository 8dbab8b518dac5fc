package controller

import (
	"context"
	"strconv"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

// Pages of events: a message is one line of at most a few KiB (a reason
// is at most maxReasonLen), so a page of the most stays well under gRPC's
// 4 MiB.
const (
	defaultEventPage = 1000
	maxEventPage     = 2000
)

// ListEvents lists node events, oldest first, a page at a time; the page
// token is the number of the last event of the page before. Any
// authenticated user may read them, as they may read the nodes; with
// PrivateData=jobs, a user reads only their own jobs' events.
func (c *controllerService) ListEvents(ctx context.Context, req *phalanxv1.ListEventsRequest) (*phalanxv1.ListEventsResponse, error) {
	q, err := c.s.eventQuery(req)
	if err != nil {
		return nil, toStatus(err)
	}
	limit := q.Limit
	hidden := c.s.access.hiddenJobs(ctx)
	var events []cluster.Event
	for { // one more than a page says whether there is another
		q.Limit = limit + 1 - len(events)
		read, err := c.s.store.Events(q)
		if err != nil {
			return nil, toStatus(err)
		}
		for _, e := range read {
			if e.Job == 0 || hidden == nil || !hidden(e.Job) {
				events = append(events, e)
			}
		}
		if len(read) < q.Limit || len(events) > limit {
			break
		}
		q.After = read[len(read)-1].Seq
	}
	out := &phalanxv1.ListEventsResponse{}
	if len(events) > limit {
		events = events[:limit]
		out.NextPageToken = strconv.FormatUint(events[limit-1].Seq, 10)
	}
	for _, e := range events {
		out.Events = append(out.Events, eventToProto(e))
	}
	return out, nil
}

// eventQuery checks a request and turns it into the store's query.
func (s *Server) eventQuery(req *phalanxv1.ListEventsRequest) (store.EventQuery, error) {
	q := store.EventQuery{Nodes: req.Nodes, Limit: defaultEventPage}
	for _, id := range req.Jobs {
		q.Jobs = append(q.Jobs, cluster.JobID(id))
	}
	switch {
	case req.PageSize < 0:
		return q, cluster.Errorf(cluster.ErrInvalid, "page size %d must not be negative", req.PageSize)
	case req.PageSize > 0:
		q.Limit = min(int(req.PageSize), maxEventPage)
	}
	if req.PageToken != "" {
		after, err := strconv.ParseUint(req.PageToken, 10, 64)
		if err != nil {
			return q, cluster.Errorf(cluster.ErrInvalid, "page token %q is not one this server gave", req.PageToken)
		}
		q.After = after
	}
	if req.Since != nil {
		if err := req.Since.CheckValid(); err != nil {
			return q, cluster.Errorf(cluster.ErrInvalid, "since: %v", err)
		}
		q.Since = req.Since.AsTime()
	}
	for _, name := range req.Nodes {
		_, err := s.store.Node(name)
		if _, declared, _ := s.declared(name); err != nil && !declared { // a declared node may not have registered yet
			return q, cluster.Errorf(cluster.ErrNotFound, "Invalid node name specified: %s", name)
		}
	}
	return q, nil
}
