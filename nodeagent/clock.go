package nodeagent

import (
	"context"
	"time"
)

// Clock is the agent's source of time, injected so tests can run time
// limits faster than the wall clock.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// sleep waits d on clock, or until ctx ends (returning its error).
func sleep(ctx context.Context, clock Clock, d time.Duration) error {
	select {
	case <-clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// backoff is a capped exponential delay between retries.
type backoff struct {
	min, max time.Duration
	cur      time.Duration
}

func newBackoff() *backoff { return &backoff{min: 100 * time.Millisecond, max: 5 * time.Second} }

// next returns the delay before the next retry and doubles the one after.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	}
	d := b.cur
	b.cur = min(2*b.cur, b.max)
	return d
}

// reset starts over from the shortest delay, after a success.
func (b *backoff) reset() { b.cur = 0 }
