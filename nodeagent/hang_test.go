package nodeagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Output written, a step committed or a busy GPU is progress; the hang
// timeout counts from the last of them.
func TestHangWatch(t *testing.T) {
	dir := t.TempDir()
	out, local := filepath.Join(dir, "out"), filepath.Join(dir, "ckpt")
	busy := false
	probe := progressProbe{outputs: []string{out}, ckpt: local, gpus: []int{3}, busy: func(g []int) bool { return busy && g[0] == 3 }}
	t0 := time.Unix(1000, 0)
	w := newHangWatch(10*time.Minute, probe, t0)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	expect := func(now time.Time, wantIdle time.Duration, wantHung bool) {
		t.Helper()
		idle, hung := w.check(now)
		if idle != wantIdle || hung != wantHung {
			t.Errorf("at %s: idle %s hung %v; want %s %v", now.Sub(t0), idle, hung, wantIdle, wantHung)
		}
	}
	expect(at(5), 5*time.Minute, false)
	os.WriteFile(out, []byte("step 1\n"), 0o644) // output: progress
	expect(at(6), 0, false)
	expect(at(15), 9*time.Minute, false)
	os.MkdirAll(filepath.Join(local, "7"), 0o755)
	os.WriteFile(filepath.Join(local, "7", ".phx-complete"), nil, 0o644) // a committed step
	expect(at(16), 0, false)
	busy = true // computing, silently
	expect(at(30), 0, false)
	busy = false
	expect(at(39), 9*time.Minute, false)
	expect(at(40), 10*time.Minute, true)
	if msg := hangMessage(10 * time.Minute); !strings.Contains(msg, "for 10m0s") {
		t.Errorf("message %q", msg)
	}
	for d, want := range map[time.Duration]time.Duration{10 * time.Minute: 30 * time.Second, 2 * time.Second: 200 * time.Millisecond} {
		if got := hangPoll(d); got != want {
			t.Errorf("hangPoll(%s) = %s; want %s", d, got, want)
		}
	}
}

// The agent stops a hung task but cannot know whether the job restarts
// (its restarts may be spent): its event says so.
func TestHangStoppedPromisesNoRestart(t *testing.T) {
	msg := hangStopped(3, 30*time.Minute)
	if !strings.HasPrefix(msg, "rank 3: ") || !strings.Contains(msg, "stopped (the job restarts if it has restarts left)") {
		t.Errorf("hang event %q; want rank 3, stopped, and a restart only if restarts are left", msg)
	}
}
