package apiclient

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// A replica that stops answering without closing its connections (a
// stopped process, a frozen host, a network that drops its packets) would
// hold a call for its whole share of the deadline (5 s of phx's 10), long
// after the others elected a new leader. So a call that has waited
// probeAfter asks every replica who it is (GetControllerStatus, which each
// answers itself, leader or not; with the connection's credentials and
// the credential in the call's metadata),
// again after probeEvery, then less often. The calls of one connection
// that wait at once share the rounds of probes. When the replica
// the call waits on does not answer within probeTimeout and another says
// it leads, the call leaves it and goes to that one. A slow call on a
// replica that answers is left alone, whoever leads. A call left this way
// is repeated on the new leader, as after a timeout, which Phalanx's calls
// allow (see the package comment).

// RoleLeader is the role (ControllerStatus.role) of a replica that leads.
const RoleLeader = "Leader"

// Timing of the probes.
const (
	// probeAfter is well above a call's usual time (milliseconds) and
	// near an election's (about a second).
	probeAfter    = time.Second
	probeEvery    = 250 * time.Millisecond
	maxProbeEvery = 2 * time.Second
	probeTimeout  = 500 * time.Millisecond
	probeFresh    = 100 * time.Millisecond
)

// movedError is the error of a call left because another replica leads.
type movedError struct{ addr, leader string }

func (e *movedError) Error() string {
	return fmt.Sprintf("controller at %s did not answer, and %s leads now", e.addr, e.leader)
}

// Is makes a left call one that did not answer in time.
func (e *movedError) Is(target error) bool { return target == errSlow }

// GRPCStatus makes it UNAVAILABLE for callers, as a slow replica's.
func (e *movedError) GRPCStatus() *status.Status { return status.New(codes.Unavailable, e.Error()) }

// leaveIfAnotherLeads runs while a call waits on addr, from probeAfter on
// until ctx ends: when addr is silent and another replica leads, it learns
// that one and ends the call with a movedError. Its rounds come further
// apart, up to maxProbeEvery, while the call waits on a replica that
// answers (slow, not stuck), so that many slow calls do not load an
// overloaded cluster with probes.
func (c *Conn) leaveIfAnotherLeads(ctx context.Context, addr string, leave context.CancelCauseFunc) {
	every := probeEvery
	for {
		if l := c.leaderInstead(ctx, addr); l != "" && ctx.Err() == nil {
			c.learn(l)
			leave(&movedError{addr: addr, leader: l})
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		every = min(2*every, maxProbeEvery)
	}
}

// probeAnswer is one replica's answer to a probe.
type probeAnswer struct {
	silent, leader bool
}

// leaderInstead returns a replica other than addr that says it leads,
// provided addr said nothing within probeTimeout ("" otherwise), from a
// round of probes no older than probeFresh.
func (c *Conn) leaderInstead(ctx context.Context, addr string) string {
	r := c.probes.round(ctx, c)
	select {
	case <-r.done:
	case <-ctx.Done():
		return ""
	}
	if !r.answers[addr].silent {
		return ""
	}
	for _, a := range c.addrs {
		if a != addr && r.answers[a].leader {
			return a
		}
	}
	return ""
}

// probeRounds shares rounds of probes among a Conn's calls: a round asks
// every replica once, and the calls that want answers while it runs, or
// up to probeFresh after it ended, take its answers.
type probeRounds struct {
	mu   sync.Mutex
	last *probeRound
}

// probeRound is one round; answers (by address) and ended are set before
// done is closed.
type probeRound struct {
	done    chan struct{}
	ended   time.Time
	answers map[string]probeAnswer
}

// round returns the round running, or the last one if it is fresh, or
// starts one with the credential of the call whose ctx asks (a CLI server
// sends each user's in the call's metadata).
func (p *probeRounds) round(ctx context.Context, c *Conn) *probeRound {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.last; r != nil && (r.ended.IsZero() || time.Since(r.ended) <= probeFresh) {
		return r
	}
	r := &probeRound{done: make(chan struct{})}
	p.last = r
	md, _ := metadata.FromOutgoingContext(ctx)
	go p.run(c, r, md.Copy())
	return r
}

// run asks every replica at once, for at most probeTimeout, with md.
func (p *probeRounds) run(c *Conn, r *probeRound, md metadata.MD) {
	ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), md), probeTimeout)
	defer cancel()
	type answer struct {
		addr string
		probeAnswer
	}
	answers := make(chan answer, len(c.addrs))
	for _, a := range c.addrs {
		go func() { answers <- answer{a, c.probe(ctx, a)} }()
	}
	got := make(map[string]probeAnswer, len(c.addrs))
	for range c.addrs {
		a := <-answers
		got[a.addr] = a.probeAnswer
	}
	p.mu.Lock()
	r.answers, r.ended = got, time.Now()
	p.mu.Unlock()
	close(r.done)
}

// probe asks the replica at addr for its status: silent when it sent no
// answer at all (not even a refusal) before ctx ended.
func (c *Conn) probe(ctx context.Context, addr string) probeAnswer {
	cc, err := c.conn(addr)
	if err != nil {
		return probeAnswer{}
	}
	st := new(phalanxv1.ControllerStatus)
	err = cc.Invoke(ctx, phalanxv1.ControllerService_GetControllerStatus_FullMethodName, &phalanxv1.GetControllerStatusRequest{}, st)
	switch status.Code(err) {
	case codes.OK:
		return probeAnswer{leader: st.GetRole() == RoleLeader}
	case codes.DeadlineExceeded, codes.Canceled, codes.Unavailable:
		return probeAnswer{silent: true}
	}
	return probeAnswer{}
}
