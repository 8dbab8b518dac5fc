package checkpoint

import (
	"context"
	"math"
	"time"
)

// Option changes how Upload works.
type Option func(*options)

type options struct {
	attempt int   // the job's attempt, recorded in the manifest
	rate    int64 // bytes a second; <= 0: unlimited
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
}

func newOptions(opts []Option) options {
	o := options{now: time.Now, sleep: sleep}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithRate limits an upload to bytesPerSecond, on average over its files
// (0 or less: unlimited). The limit is per call: uploads run side by side
// share nothing.
func WithRate(bytesPerSecond int64) Option {
	return func(o *options) { o.rate = bytesPerSecond }
}

// WithAttempt records in the manifest that attempt (of the job) wrote the
// step (default 0).
func WithAttempt(attempt int) Option {
	return func(o *options) { o.attempt = attempt }
}

// withClock replaces the wall clock and the sleep of the throttle (tests).
func withClock(now func() time.Time, sleep func(context.Context, time.Duration) error) Option {
	return func(o *options) { o.now, o.sleep = now, sleep }
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// maxBurst is how far a throttle may fall behind its schedule (a slow
// disk, a pause between files) before it forgets the credit: without the
// bound, a long stall would be followed by a burst at full speed.
const maxBurst = time.Second

// throttle paces a copy at rate bytes a second. It keeps a schedule: the
// bytes sent since start may not leave before start + sent/rate, and wait
// sleeps until they may. A nil throttle, or one with rate <= 0, never
// sleeps.
type throttle struct {
	rate  int64
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	start time.Time
	sent  int64
}

func newThrottle(o options) *throttle {
	if o.rate <= 0 {
		return nil
	}
	return &throttle{rate: o.rate, now: o.now, sleep: o.sleep, start: o.now()}
}

// wait accounts for n bytes just copied and sleeps until the schedule
// allows them.
func (t *throttle) wait(ctx context.Context, n int) error {
	if t == nil {
		return nil
	}
	t.sent += int64(n)
	now := t.now()
	ahead := t.start.Add(t.due()).Sub(now)
	if ahead < -maxBurst {
		t.start, t.sent = now, 0
		return nil
	}
	if ahead <= 0 {
		return nil
	}
	return t.sleep(ctx, ahead)
}

// due is how long the bytes sent take at rate, without overflowing for
// any size a file system holds.
func (t *throttle) due() time.Duration {
	whole, part := t.sent/t.rate, t.sent%t.rate
	if whole >= math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(whole)*time.Second +
		time.Duration(float64(part)*float64(time.Second)/float64(t.rate))
}
