package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// A partition with AllowGroups takes the jobs of its groups' members only
// (root's too), at submit and when scontrol update moves a job there.
func TestAllowGroups(t *testing.T) {
	parts := []*cluster.Partition{
		{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp},
		{Name: "ml", AllNodes: true, State: cluster.PartitionUp, AllowGroups: []string{"mlteam", "admins"}},
	}
	groups := map[int][]string{1000: {"users", "mlteam"}, 1001: {"users"}}
	s := newTestServer(t, Config{Partitions: parts, LookupGroups: func(uid, _ int) ([]string, error) {
		return groups[uid], nil
	}})
	register(t, s, nil, "n1")
	for _, tc := range []struct {
		uid  int32
		part string
		ok   bool
	}{
		{1000, "ml", true},
		{1001, "ml", false},
		{1001, "gpu", true},
		{0, "ml", true}, // root
	} {
		spec := testSpec(1, 1)
		spec.Uid, spec.Partition = tc.uid, tc.part
		_, err := s.submit(context.Background(), spec, true, nil)
		switch {
		case tc.ok && err != nil:
			t.Errorf("uid %d on %s: %v", tc.uid, tc.part, err)
		case !tc.ok && (err == nil || !errors.Is(err, cluster.ErrPermission) || !strings.Contains(err.Error(), "User's group not permitted to use this partition: partition ml takes members of mlteam,admins")):
			t.Errorf("uid %d on %s: %v; want refused", tc.uid, tc.part, err)
		}
	}
}
