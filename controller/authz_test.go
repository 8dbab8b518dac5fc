package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

// The access rules alone, without a replica: who may change, read and
// list which job, by the caller's level and PrivateData=jobs.
func TestAccessRules(t *testing.T) {
	jobs := map[cluster.JobID]*cluster.Job{
		7: {ID: 7, User: "alice", UID: 1000},
		8: {ID: 8, User: "bob", UID: 1001},
	}
	record := func(id cluster.JobID) (*cluster.Job, error) {
		if j, ok := jobs[id]; ok {
			return j, nil
		}
		return nil, cluster.Errorf(cluster.ErrNotFound, "job %d not found", id)
	}
	as := func(user string, uid uint32) context.Context {
		return auth.NewContext(context.Background(), auth.Identity{User: user, UID: uid, GID: 100, Kind: auth.KindLocal})
	}
	alice, bob, carol, dave := as("alice", 1000), as("bob", 1001), as("carol", 1002), as("dave", 1003)
	for _, private := range []bool{false, true} {
		a := newAccess(Config{AdminUsers: []string{"dave"}, OperatorUsers: []string{"carol"}, PrivateJobs: private, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, record)
		for _, tc := range []struct {
			ctx            context.Context
			who            string
			change, read   bool
			seesScript     bool
			listsOthersJob bool
		}{
			{alice, "owner", true, true, true, true},
			{bob, "another user", false, !private, false, !private},
			{carol, "operator", true, true, true, true},
			{dave, "administrator", true, true, true, true},
			{context.Background(), "no authentication", true, true, true, true},
		} {
			j := jobs[7]
			if err := a.mayChange(tc.ctx, j, "cancel"); (err == nil) != tc.change || (err != nil && !errors.Is(err, cluster.ErrPermission)) {
				t.Errorf("private=%v, %s: mayChange = %v; want allowed=%v", private, tc.who, err, tc.change)
			}
			if err := a.mayRead(tc.ctx, j); (err == nil) != tc.read {
				t.Errorf("private=%v, %s: mayRead = %v; want allowed=%v", private, tc.who, err, tc.read)
			}
			if got := a.seesPrivateOf(tc.ctx, 7); got != tc.seesScript {
				t.Errorf("private=%v, %s: seesPrivateOf = %v; want %v", private, tc.who, got, tc.seesScript)
			}
			q := store.JobQuery{}
			a.hidePrivate(tc.ctx, &q)
			if listed := q.Match == nil || q.Match(j); listed != tc.listsOthersJob {
				t.Errorf("private=%v, %s: job 7 listed = %v; want %v", private, tc.who, listed, tc.listsOthersJob)
			}
			if hidden := a.hiddenJobs(tc.ctx); (hidden == nil || !hidden(7)) != tc.listsOthersJob {
				t.Errorf("private=%v, %s: job 7's events hidden = %v; want %v", private, tc.who, hidden != nil && hidden(7), !tc.listsOthersJob)
			}
		}
	}
	if a := newAccess(Config{}, record); a.seesPrivateOf(alice, 99) {
		t.Error("seesPrivateOf a job that does not exist = true; want false")
	}
}
