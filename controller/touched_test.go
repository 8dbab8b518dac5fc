package controller

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// A job changed by scontrol (held, released) is decided by the next quick
// pass, wherever it was in the queue: held while waiting for its --begin
// time, it shows JobHeldUser at once, not BeginTime until the next full
// pass; released, BeginTime again.
func TestChangedJobIsDecidedAtOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, RaftAddr: freeAddr(t), SchedInterval: time.Hour} // one full pass, at the start
	s := newTestServer(t, cfg)
	register(t, s, nil, "n1")
	spec := testSpec(1, 8)
	spec.BeginTime = timestamppb.New(time.Now().Add(time.Hour))
	resp, err := s.submit(context.Background(), spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.JobId
	// Restarted, the controller's full pass puts the job behind its queue
	// head's mark: quick passes no longer look at it unless it changes.
	s.Close()
	s = newTestServer(t, cfg)
	reason := func() string {
		j, err := (&controllerService{s: s}).GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil {
			t.Fatal(err)
		}
		return j.Reason
	}
	eventually(t, 10*time.Second, func() error { return wantReason(reason(), cluster.ReasonBeginTime) })
	for _, step := range []struct {
		hold phalanxv1.HoldRequest
		want cluster.PendingReason
	}{
		{phalanxv1.HoldRequest_HOLD_REQUEST_HOLD, "JobHeldAdmin"},
		{phalanxv1.HoldRequest_HOLD_REQUEST_RELEASE, cluster.ReasonBeginTime},
	} {
		if err := s.updateJob(context.Background(), &phalanxv1.UpdateJobRequest{JobId: id, Hold: step.hold}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error { return wantReason(reason(), step.want) })
	}
}

// freeAddr is a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func wantReason(got string, want cluster.PendingReason) error {
	if cluster.PendingReason(got) != want {
		return cluster.Errorf(cluster.ErrInvalid, "reason %s; want %s", got, want)
	}
	return nil
}
