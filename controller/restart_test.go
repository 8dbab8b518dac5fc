package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// A submit's restart policy: the defaults (3 restarts, on node faults),
// what sbatch's options change, and what is refused.
func TestRestartPolicyFromSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*phalanxv1.JobSpec)
		want string // MaxRestarts/On, or the error's text
	}{
		{"defaults", func(*phalanxv1.JobSpec) {}, "3/node"},
		{"no-requeue", func(s *phalanxv1.JobSpec) { s.NoRequeue = true }, "0/node"},
		{"max and causes", func(s *phalanxv1.JobSpec) { s.MaxRestarts, s.RestartOn = proto.Int32(10), "exit,node" }, "10/node,exit"},
		{"none", func(s *phalanxv1.JobSpec) { s.RestartOn = "none" }, "3/none"},
		{"too many", func(s *phalanxv1.JobSpec) { s.MaxRestarts = proto.Int32(129) }, "--max-restarts=129: give 0 to 128"},
		{"negative", func(s *phalanxv1.JobSpec) { s.MaxRestarts = proto.Int32(-1) }, "--max-restarts=-1: give 0 to 128"},
		{"unknown cause", func(s *phalanxv1.JobSpec) { s.RestartOn = "node,oom" }, `--restart-on=node,oom: "oom" is not a restart cause`},
	} {
		spec := testSpec(1, 8)
		tc.edit(spec)
		j, err := jobFromSpec(spec, 1<<20)
		var got string
		if err != nil {
			got = err.Error()
			if !errors.Is(err, cluster.ErrInvalid) {
				t.Errorf("%s: %v is not ErrInvalid", tc.name, err)
			}
		} else {
			got = fmt.Sprintf("%d/%s", j.Restart.MaxRestarts, j.Restart.On)
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A submit's --signal is checked: a signal number Linux has, a lead of at
// most 65535 s.
func TestSignalFromSpec(t *testing.T) {
	for _, tc := range []struct {
		sig, secs int32
		want      string
	}{
		{10, 90, ""},
		{65, 60, "--signal: signal 65: give 1 to 64"},
		{-1, 60, "--signal: signal -1"},
		{10, 70000, "--signal: @70000: give 0 to 65535 seconds"},
	} {
		spec := testSpec(1, 8)
		spec.Signal, spec.SignalSeconds, spec.SignalBatch = tc.sig, tc.secs, true
		j, err := jobFromSpec(spec, 1<<20)
		switch {
		case tc.want == "" && (err != nil || j.Signal != cluster.JobSignal{Signal: 10, Before: 90 * time.Second, Batch: true}):
			t.Errorf("signal %d@%d: %+v, %v", tc.sig, tc.secs, j, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("signal %d@%d: %v, want %q", tc.sig, tc.secs, err, tc.want)
		}
	}
}
