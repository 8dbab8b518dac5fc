package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

func (c *controllerService) ListNodes(ctx context.Context, req *phalanxv1.ListNodesRequest) (*phalanxv1.ListNodesResponse, error) {
	s := c.s
	limit := defaultPageSize
	switch {
	case req.PageSize < 0:
		return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "page size %d must not be negative", req.PageSize))
	case req.PageSize > 0:
		limit = min(int(req.PageSize), maxPageSize)
	}
	st, err := s.store.State()
	if err != nil {
		return nil, toStatus(err)
	}
	all := s.withUnregistered(st.Nodes)
	nodes := all[sort.Search(len(all), func(i int) bool { return all[i].Name > req.PageToken }):]
	usage := cluster.Usage(st.Active)
	lines := s.nodeLines()
	leading := s.ready()
	out := &phalanxv1.ListNodesResponse{}
	for _, n := range nodes {
		if len(req.Names) > 0 && !slices.Contains(req.Names, n.Name) {
			continue
		}
		if len(out.Nodes) == limit {
			out.NextPageToken = out.Nodes[limit-1].Name
			break
		}
		seen, heard := s.nodes.of(n.Name)
		pn := nodeToProto(n, usage[n.Name], st.Partitions, seen)
		// Its agent said it stops, or this leader has not heard from it
		// since it took over: nothing is placed on it, and it shows so.
		// (A follower's memory of its nodes is from its last term, if any.)
		pn.NotResponding = pn.NotResponding || (leading && !heard)
		// Its line's layout: Slurm shows it; Phalanx, which places by CPUs,
		// keeps it in the config only.
		c := lines[n.Name]
		pn.Sockets, pn.CoresPerSocket, pn.ThreadsPerCore = int32(c.Sockets), int32(c.CoresPerSocket), int32(c.ThreadsPerCore)
		out.Nodes = append(out.Nodes, pn)
	}
	if len(req.Names) > 0 && len(out.Nodes) == 0 && req.PageToken == "" {
		return nil, toStatus(fmt.Errorf("node %v: %w", req.Names, cluster.ErrNotFound))
	}
	return out, nil
}

func (c *controllerService) ListPartitions(ctx context.Context, req *phalanxv1.ListPartitionsRequest) (*phalanxv1.ListPartitionsResponse, error) {
	st, err := c.s.store.State()
	if err != nil {
		return nil, toStatus(err)
	}
	// A declared node that never registered is the partition's too, as
	// ListNodes shows it (DOWN, not responding).
	nodes := c.s.withUnregistered(st.Nodes)
	out := &phalanxv1.ListPartitionsResponse{}
	for _, p := range st.Partitions {
		out.Partitions = append(out.Partitions, partitionToProto(p, nodes))
	}
	return out, nil
}
