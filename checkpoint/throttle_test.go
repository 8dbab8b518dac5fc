package checkpoint

import (
	"context"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when told to, or when slept on.
type fakeClock struct {
	now    time.Time
	slept  time.Duration
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	c.slept += d
	c.sleeps = append(c.sleeps, d)
	return nil
}

func (c *fakeClock) option() Option { return withClock(c.Now, c.Sleep) }

func TestUploadSleepsSizeOverRate(t *testing.T) {
	files := map[string]entry{
		"a.bin":     {bytesOf(5*chunk + 123), 0o644},
		"dir/b.bin": {bytesOf(chunk / 3), 0o644},
		"c.bin":     {bytesOf(7), 0o644},
	}
	var n int64
	for _, e := range files {
		n += int64(len(e.data))
	}
	local := commitStep(t, t.TempDir(), 1, files)
	for _, rate := range []int64{100 << 10, 1 << 20, 3 << 20} {
		clock := newFakeClock()
		if _, err := Upload(context.Background(), local, t.TempDir(), 1, 0, WithRate(rate), clock.option()); err != nil {
			t.Fatal(err)
		}
		want := time.Duration(float64(n) / float64(rate) * float64(time.Second))
		if d := clock.slept - want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("%d bytes at %d B/s: slept %v, want %v", n, rate, clock.slept, want)
		}
	}

	clock := newFakeClock()
	if _, err := Upload(context.Background(), local, t.TempDir(), 1, 0, WithRate(0), clock.option()); err != nil {
		t.Fatal(err)
	}
	if clock.slept != 0 {
		t.Errorf("unlimited upload slept %v", clock.slept)
	}
}

func TestThrottleKeepsUpWithSlowCopies(t *testing.T) {
	clock := newFakeClock()
	th := newThrottle(options{rate: 1000, now: clock.Now, sleep: clock.Sleep})
	ctx := context.Background()

	// The disk is slower than the rate: no sleeping.
	clock.now = clock.now.Add(600 * time.Millisecond)
	th.wait(ctx, 500)
	clock.now = clock.now.Add(600 * time.Millisecond)
	th.wait(ctx, 500)
	if clock.slept != 0 {
		t.Fatalf("slept %v behind schedule", clock.slept)
	}

	// Faster than the rate: 1000 bytes sent at 1.2 s, 1500 more due by
	// 2.5 s.
	th.wait(ctx, 1500)
	if want := 1300 * time.Millisecond; clock.slept != want {
		t.Errorf("slept %v, want %v", clock.slept, want)
	}
}

func TestThrottleForgetsOldCredit(t *testing.T) {
	clock := newFakeClock()
	th := newThrottle(options{rate: 1000, now: clock.Now, sleep: clock.Sleep})
	ctx := context.Background()

	th.wait(ctx, 1000) // 1 s
	clock.now = clock.now.Add(10 * time.Second)
	th.wait(ctx, 1000) // after a stall: no sleep, and no credit kept
	th.wait(ctx, 1000) // 1 s again, not a burst on 9 s of credit
	if want := []time.Duration{time.Second, time.Second}; len(clock.sleeps) != 2 ||
		clock.sleeps[0] != want[0] || clock.sleeps[1] != want[1] {
		t.Errorf("sleeps %v, want %v", clock.sleeps, want)
	}
}

func TestThrottleDue(t *testing.T) {
	for _, tc := range []struct {
		sent, rate int64
		want       time.Duration
	}{
		{1, 3, time.Second / 3},
		{10 << 40, 1 << 30, 10240 * time.Second},          // 10 TiB at 1 GiB/s
		{1<<62 + 1, 1, time.Duration(1<<63 - 1)},          // no overflow
		{5_000_000_001, 1_000_000_000, 5*time.Second + 1}, // sent*1e9 would overflow
	} {
		th := &throttle{rate: tc.rate, sent: tc.sent}
		if got := th.due(); got != tc.want {
			t.Errorf("%d bytes at %d B/s: due %v, want %v", tc.sent, tc.rate, got, tc.want)
		}
	}
	if newThrottle(options{rate: 0}) != nil || newThrottle(options{rate: -1}) != nil {
		t.Error("a rate <= 0 made a throttle")
	}
}
