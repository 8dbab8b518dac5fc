package controller

import (
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/auth"
)

func TestRateLimiter(t *testing.T) {
	r := newRateLimiter(RateLimit{Bucket: 3, Refill: 1, Period: time.Second, Table: 2})
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		if ok, _ := r.allow(1000, t0); !ok {
			t.Fatalf("call %d of a burst of 3 refused", i+1)
		}
	}
	ok, wait := r.allow(1000, t0.Add(300*time.Millisecond))
	if ok || wait != 700*time.Millisecond {
		t.Fatalf("fourth call: allowed %v, wait %v; want refused, 700ms until the next token", ok, wait)
	}
	if ok, _ := r.allow(1001, t0); !ok {
		t.Fatal("another user is limited by the first one's calls")
	}
	if ok, _ := r.allow(1000, t0.Add(time.Second)); !ok {
		t.Fatal("a token refilled after one period was not given")
	}
	if ok, _ := r.allow(1000, t0.Add(time.Second+time.Millisecond)); ok {
		t.Fatal("a second call within the period after a refill of one was allowed")
	}
	// The table holds 2 users: a third makes room, and an idle user's
	// bucket, full again by then, goes first.
	if ok, _ := r.allow(1002, t0.Add(10*time.Second)); !ok || len(r.buckets) > 2 {
		t.Fatalf("a third user: allowed %v, %d buckets; want allowed, at most 2", ok, len(r.buckets))
	}
	if newRateLimiter(RateLimit{}) != nil {
		t.Fatal("a zero RateLimit is not off")
	}
}

// The refusal says what the limit is, not that the calls came at once.
func TestRateLimitedSaysTheLimit(t *testing.T) {
	err := rateLimited(auth.Identity{User: "phxtest1", UID: 1012}, RateLimit{Bucket: 5, Refill: 1, Period: time.Second}, 800*time.Millisecond)
	want := "phxtest1 (uid 1012) made calls faster than the rate limit allows (a burst of 5, then 1 every 1s): slow down, the next one is allowed in 800ms (the rl_* settings of SlurmctldParameters)"
	if err.Error() != want {
		t.Errorf("got %q\nwant %q", err, want)
	}
}
