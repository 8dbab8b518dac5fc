package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// A refused call says what the caller is, with the article the word is
// said with: "a user", "an operator".
func TestRequireNamesTheCallersLevel(t *testing.T) {
	s := newTestServer(t, Config{OperatorUsers: []string{"carol"}})
	for _, tc := range []struct {
		id   auth.Identity
		lvl  level
		want string
	}{
		{auth.Identity{User: "tourops1", UID: 1012, GID: 100, Kind: auth.KindLocal}, levelAdmin,
			"permission denied: backing up the state is for administrators; tourops1 (uid 1012) is a user"},
		{auth.Identity{User: "carol", UID: 1002, GID: 100, Kind: auth.KindLocal}, levelAdmin,
			"permission denied: backing up the state is for administrators; carol (uid 1002) is an operator"},
		{auth.Identity{User: "tourops1", UID: 1012, GID: 100, Kind: auth.KindLocal}, levelOperator,
			"permission denied: backing up the state is for operators; tourops1 (uid 1012) is a user"},
	} {
		err := s.access.require(auth.NewContext(context.Background(), tc.id), tc.lvl, "backing up the state")
		if !errors.Is(err, cluster.ErrPermission) || err.Error() != tc.want {
			t.Errorf("%s needing %s: %v\nwant %s", tc.id.User, levelNames[tc.lvl], err, tc.want)
		}
	}
}

// A refused credential's advice fits what is wrong with it: another key
// asks about the cluster key; a token that is no credential at all does
// not.
func TestAuthAdvice(t *testing.T) {
	now := time.Now()
	other, err := auth.Issue(auth.Key(strings.Repeat("o", auth.MinKeySize)), auth.Identity{User: "alice", UID: 1000, Kind: auth.KindToken}, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]string{
		other:     "is not among them) (is the cluster key the same on every host?)",
		"garbage": "(not a credential Phalanx issued: check $PHX_TOKEN, or get one with `phx scontrol token`)",
	} {
		_, err := auth.Verify(testKey, tok, now)
		if got := authAdvice(err); !strings.HasSuffix(got, want) || (tok == "garbage" && strings.Contains(got, "cluster key")) {
			t.Errorf("advice for %.10q: %q; want it to end %q", tok, got, want)
		}
	}
}

// A node's credential serves the node API and one call of the user API:
// a replica's status, which its agent asks every replica for to find the
// leader when one stops answering (apiclient's probes). Nothing else.
func TestNodeCredentialReadsOnlyAReplicasStatus(t *testing.T) {
	s := newTestServer(t, Config{})
	tok, err := auth.Issue(testKey, auth.NodeIdentity("gpu001"), time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(auth.MetadataKey, tok))
	if _, err := s.access.authenticate(ctx, phalanxv1.ControllerService_GetControllerStatus_FullMethodName); err != nil {
		t.Errorf("a node's status call: %v; want it authenticated", err)
	}
	for _, method := range []string{phalanxv1.ControllerService_ListJobs_FullMethodName, phalanxv1.ControllerService_SubmitJob_FullMethodName} {
		if _, err := s.access.authenticate(ctx, method); status.Code(err) != codes.PermissionDenied {
			t.Errorf("a node's %s: %v; want PermissionDenied", method, err)
		}
	}
}
