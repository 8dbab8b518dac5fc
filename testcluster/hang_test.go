package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// A job that prints once and then makes no progress (no output, no
// checkpoint, its fake GPUs idle) is stopped by its agents after its hang
// timeout and restarted (its policy names hang); its second attempt hangs
// the same way and, its one restart spent, ends FAILED with reason Hang.
func TestHungJobRestarts(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2, MinHangTimeout: time.Second})
	s := spec(t.TempDir(), "hangs", 2, 8, "#!/bin/sh\necho started attempt $PHX_ATTEMPT\nexec sleep 600\n")
	s.HangTimeoutSeconds = 2
	s.RestartOn = "node,hang"
	s.MaxRestarts = proto.Int32(1)
	id := submit(t, c, s)
	c.WaitJob(id, 20*time.Second, "RUNNING")
	running := time.Now()
	var j *phalanxv1.Job
	c.Eventually(30*time.Second, func() error {
		var err error
		j, err = c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.State != "FAILED" || j.Attempt != 1 {
			return fmt.Errorf("job %d: %s attempt %d (%s), %v; want FAILED in attempt 1", id, j.GetState(), j.GetAttempt(), j.GetReason(), err)
		}
		return nil
	})
	t.Logf("two attempts of a hang timeout of 2s each ended %s after the first ran", time.Since(running).Round(time.Millisecond))
	if !strings.HasPrefix(j.Reason, "Hang: no output, no checkpoint and idle GPUs for ") {
		t.Errorf("reason %q", j.Reason)
	}
	if len(j.Attempts) != 2 || j.Attempts[0].Cause != "hang" || j.Attempts[0].State != "FAILED" {
		t.Errorf("attempts %v; want the first FAILED with cause hang", j.Attempts)
	}
	// Each rank's agent reported its suspicion, in each attempt: the
	// job's events say so.
	c.Eventually(10*time.Second, func() error {
		evs, err := c.Client.ListEvents(context.Background(), &phalanxv1.ListEventsRequest{Jobs: []uint64{id}})
		hangs := 0
		for _, e := range evs.GetEvents() {
			if e.Kind == "hang" && e.Node != "" && strings.Contains(e.Message, "no output, no checkpoint and idle GPUs") {
				hangs++
			}
		}
		if err != nil || hangs < 2 {
			return fmt.Errorf("job %d's events: %v, %v; want its ranks' hang events", id, evs, err)
		}
		return nil
	})
	bad := spec(t.TempDir(), "too-long", 1, 1, "#!/bin/sh\ntrue\n")
	bad.HangTimeoutSeconds = 13 * 3600
	if _, err := c.Client.SubmitJob(context.Background(), &phalanxv1.SubmitJobRequest{Spec: bad}); err == nil || !strings.Contains(err.Error(), "--hang-timeout") {
		t.Errorf("a hang timeout of 13 h: %v; want refused", err)
	}
}
