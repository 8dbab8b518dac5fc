package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// Per-user rate limiting of API calls, as Slurm's slurmctld does with
// SlurmctldParameters=rl_enable: each uid has a bucket of tokens; a call
// takes one; the bucket refills at RateLimit.Refill tokens every
// RateLimit.Period, up to RateLimit.Bucket. A call finding the bucket
// empty is refused (RESOURCE_EXHAUSTED) with the time until the next
// token. Administrators, controllers and nodes are not limited. Each
// replica counts the calls it receives from clients (forwarded calls are
// counted where they arrived).

// RateLimit configures the limiter; a zero Bucket turns it off.
type RateLimit struct {
	Bucket int           // rl_bucket_size: the most calls in a burst
	Refill int           // rl_refill_rate: tokens added each Period
	Period time.Duration // rl_refill_period
	Table  int           // rl_table_size: the most users tracked at once
}

type bucket struct {
	tokens int
	last   time.Time // when tokens were last refilled
}

// rateLimiter is the per-uid buckets of one replica.
type rateLimiter struct {
	cfg     RateLimit
	mu      sync.Mutex
	buckets map[uint32]*bucket
}

func newRateLimiter(cfg RateLimit) *rateLimiter {
	if cfg.Bucket <= 0 {
		return nil
	}
	return &rateLimiter{cfg: cfg, buckets: map[uint32]*bucket{}}
}

// allow takes a token of uid's at now, or says how long until there is
// one.
func (r *rateLimiter) allow(uid uint32, now time.Time) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[uid]
	if b == nil {
		r.makeRoom(now)
		b = &bucket{tokens: r.cfg.Bucket, last: now}
		r.buckets[uid] = b
	}
	if periods := int(now.Sub(b.last) / r.cfg.Period); periods > 0 {
		b.tokens = min(r.cfg.Bucket, b.tokens+periods*r.cfg.Refill)
		b.last = b.last.Add(time.Duration(periods) * r.cfg.Period)
	}
	if b.tokens == 0 {
		return false, b.last.Add(r.cfg.Period).Sub(now)
	}
	b.tokens--
	return true, 0
}

// makeRoom drops the buckets that would be full by now (their users are
// idle: a new bucket is the same) when the table is full; if none is, the
// least recently refilled one goes.
func (r *rateLimiter) makeRoom(now time.Time) {
	if len(r.buckets) < r.cfg.Table {
		return
	}
	var oldest uint32
	var oldestAt time.Time
	for uid, b := range r.buckets {
		if need := r.cfg.Bucket - b.tokens; r.cfg.Refill > 0 && now.Sub(b.last) >= time.Duration((need+r.cfg.Refill-1)/r.cfg.Refill)*r.cfg.Period {
			delete(r.buckets, uid)
			continue
		}
		if oldestAt.IsZero() || b.last.Before(oldestAt) {
			oldest, oldestAt = uid, b.last
		}
	}
	if len(r.buckets) >= r.cfg.Table {
		delete(r.buckets, oldest)
	}
}

// limit takes a token from the caller's bucket, or refuses the call. Only
// user API calls of users and operators count, and a listing counts once,
// at its first page, however many pages it takes.
func (s *Server) limit(ctx context.Context, method string, req any) error {
	if s.limiter == nil || !strings.HasPrefix(method, userServicePrefix) {
		return nil
	}
	if next, ok := req.(interface{ GetPageToken() string }); ok && next.GetPageToken() != "" {
		return nil
	}
	id, lvl, ok := s.access.caller(ctx)
	if !ok || lvl == levelAdmin {
		return nil
	}
	allowed, wait := s.limiter.allow(id.UID, s.cfg.Clock.Now())
	if allowed {
		return nil
	}
	s.access.audit(ctx, method, "rate limited", "user", id.User, "uid", id.UID)
	return toStatus(rateLimited(id, s.limiter.cfg, wait))
}

// rateLimited is the refusal of a call over id's rate: what the limit is
// and when the next call is allowed.
func rateLimited(id auth.Identity, c RateLimit, wait time.Duration) error {
	return cluster.Errorf(cluster.ErrLimit, "%s made calls faster than the rate limit allows (a burst of %d, then %d every %s): slow down, the next one is allowed in %s (the rl_* settings of SlurmctldParameters)",
		id, c.Bucket, c.Refill, c.Period, wait.Round(time.Millisecond))
}
