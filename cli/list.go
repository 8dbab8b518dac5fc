package cli

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// listJobs pages through every job req selects. The controller bounds each
// page by count and by encoded size (so that it fits gRPC's 4 MiB), and the
// timeout covers each page, not the whole listing: a listing of any size
// works.
func (cn *conn) listJobs(ctx context.Context, req *phalanxv1.ListJobsRequest) ([]*phalanxv1.Job, error) {
	jobs, _, err := cn.listClusterJobs(ctx, req)
	return jobs, err
}

// listClusterJobs is listJobs, and the name of the cluster that answered.
func (cn *conn) listClusterJobs(ctx context.Context, req *phalanxv1.ListJobsRequest) (jobs []*phalanxv1.Job, cluster string, err error) {
	req = proto.Clone(req).(*phalanxv1.ListJobsRequest)
	for {
		var resp *phalanxv1.ListJobsResponse
		err := cn.call(ctx, func(ctx context.Context) (err error) {
			resp, err = cn.api.ListJobs(ctx, req)
			return err
		})
		if err != nil {
			return nil, "", err
		}
		jobs, cluster = append(jobs, resp.Jobs...), resp.ClusterName
		if resp.NextPageToken == "" {
			return jobs, cluster, nil
		}
		if resp.NextPageToken == req.PageToken {
			return nil, "", fmt.Errorf("the controller gave page %q again: listing stopped", req.PageToken)
		}
		req.PageToken = resp.NextPageToken
	}
}

// listNodes pages through every node req selects.
func (cn *conn) listNodes(ctx context.Context, req *phalanxv1.ListNodesRequest) ([]*phalanxv1.Node, error) {
	req = proto.Clone(req).(*phalanxv1.ListNodesRequest)
	var out []*phalanxv1.Node
	for {
		var resp *phalanxv1.ListNodesResponse
		err := cn.call(ctx, func(ctx context.Context) (err error) {
			resp, err = cn.api.ListNodes(ctx, req)
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, resp.Nodes...)
		if resp.NextPageToken == "" {
			return out, nil
		}
		if resp.NextPageToken == req.PageToken {
			return nil, fmt.Errorf("the controller gave page %q again: listing stopped", req.PageToken)
		}
		req.PageToken = resp.NextPageToken
	}
}

// listEvents pages through every event req selects, oldest first.
func (cn *conn) listEvents(ctx context.Context, req *phalanxv1.ListEventsRequest) ([]*phalanxv1.Event, error) {
	req = proto.Clone(req).(*phalanxv1.ListEventsRequest)
	var out []*phalanxv1.Event
	for {
		var resp *phalanxv1.ListEventsResponse
		err := cn.call(ctx, func(ctx context.Context) (err error) {
			resp, err = cn.api.ListEvents(ctx, req)
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, resp.Events...)
		if resp.NextPageToken == "" {
			return out, nil
		}
		if resp.NextPageToken == req.PageToken {
			return nil, fmt.Errorf("the controller gave page %q again: listing stopped", req.PageToken)
		}
		req.PageToken = resp.NextPageToken
	}
}
