package sim

import (
	"math"
	"testing"
	"time"
)

// With no failures, only checkpoints cost: ETTR is interval/(interval+cost).
func TestETTRWithoutFailures(t *testing.T) {
	c := ETTRConfig{Nodes: 10, GPUsPerNode: 8, Duration: 100 * time.Hour, CheckpointCost: time.Minute, Runs: 1}
	r, err := ETTR(c, 59*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if want := 59.0 / 60; math.Abs(r.ETTR-want) > 1e-9 || r.Failures != 0 {
		t.Errorf("ETTR %v, %v failures; want %v and none", r.ETTR, r.Failures, want)
	}
	if math.Abs(r.LostGPUHours-100*80*(1-59.0/60)) > 1e-6 {
		t.Errorf("lost GPU-hours %v", r.LostGPUHours)
	}
}

// Failures cost about what first-order theory says: per failure, half an
// interval of work redone (plus the cost of a checkpoint in progress) and
// the downtime; the best interval is near Young and Daly's.
func TestETTRAgainstTheory(t *testing.T) {
	kinds := []FailureKind{{Name: "x", PerNodeDay: 0.01, Detect: time.Minute, Recover: 4 * time.Minute}}
	c := ETTRConfig{Nodes: 100, GPUsPerNode: 8, Duration: 30 * 24 * time.Hour, Kinds: kinds, CheckpointCost: 30 * time.Second, Runs: 20, Seed: 1}
	tau := 30 * time.Minute
	r, err := ETTR(c, tau)
	if err != nil {
		t.Fatal(err)
	}
	perHour := 0.01 * 100 / 24 // one failure an hour... and a little
	expFailures := perHour * 720 * (1 - r.DownFraction)
	if math.Abs(r.Failures-expFailures)/expFailures > 0.1 {
		t.Errorf("%.0f failures; want about %.0f", r.Failures, expFailures)
	}
	// Theory: ETTR ≈ (tau/(tau+C)) × (1 - λ(down + (tau+C)/2)) over the up time.
	lambda := perHour / 3600
	up := 1 - lambda*(5*60+(tau.Seconds()+30)/2)
	want := tau.Seconds() / (tau.Seconds() + 30) * up
	if math.Abs(r.ETTR-want) > 0.02 {
		t.Errorf("ETTR %.4f; first-order theory says %.4f", r.ETTR, want)
	}
	ivs := []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 40 * time.Minute, 80 * time.Minute, 160 * time.Minute}
	rs, best, err := BestInterval(c, ivs)
	if err != nil {
		t.Fatal(err)
	}
	hint := rs[0].YoungDalyHint // sqrt(2 × 30 s × 3600 s/0.0417...) ≈ 7.6 min
	if got := rs[best].Interval; got < hint/2 || got > hint*3 {
		t.Errorf("best interval %s, Young-Daly %s: too far apart", got, hint)
	}
	for i := range rs {
		if i != best && rs[i].ETTR > rs[best].ETTR {
			t.Errorf("BestInterval chose %s (%.4f) over %s (%.4f)", rs[best].Interval, rs[best].ETTR, rs[i].Interval, rs[i].ETTR)
		}
	}
	again, _ := ETTR(c, tau)
	if again.ETTR != r.ETTR {
		t.Error("the same configuration and seed gave another result")
	}
}

func TestETTRValidate(t *testing.T) {
	for _, c := range []ETTRConfig{
		{Nodes: 0, GPUsPerNode: 8, Duration: time.Hour, Runs: 1},
		{Nodes: 1, GPUsPerNode: 8, Duration: 0, Runs: 1},
		{Nodes: 1, GPUsPerNode: 8, Duration: time.Hour, Runs: 0},
		{Nodes: 1, GPUsPerNode: 8, Duration: time.Hour, Runs: 1, Kinds: []FailureKind{{Name: "x", PerNodeDay: -1}}},
	} {
		if _, err := ETTR(c, time.Hour); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := ETTR(ETTRConfig{Nodes: 1, GPUsPerNode: 1, Duration: time.Hour, Runs: 1}, 0); err == nil {
		t.Error("a zero interval accepted")
	}
}

// The kinds of Llama3Failures add up to Meta's 419 unexpected
// interruptions in 54 days on 2,048 nodes.
func TestLlama3FailuresTotal(t *testing.T) {
	var perNodeDay float64
	for _, k := range Llama3Failures(30*time.Second, 10*time.Minute, time.Minute) {
		perNodeDay += k.PerNodeDay
	}
	if got := perNodeDay * 54 * 2048; math.Abs(got-419) > 1e-6 {
		t.Errorf("the kinds add up to %.3f interruptions in 54 days on 2,048 nodes, want 419", got)
	}
}
