package apiclient

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// A replica that stops answering without closing its connections (a
// stopped process, a frozen host, a network that drops its packets) would
// hold a call for its whole share of the deadline (5 s of phx's 10), long
// after the others elected a new leader. So a call that has waited
// probeAfter asks every replica who it is (GetControllerStatus, which each
// answers itself, leader or not; with the connection's credentials only),
// again every probeEvery. When the replica
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
	probeAfter   = time.Second
	probeEvery   = 250 * time.Millisecond
	probeTimeout = 500 * time.Millisecond
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
// that one and ends the call with a movedError.
func (c *Conn) leaveIfAnotherLeads(ctx context.Context, addr string, leave context.CancelCauseFunc) {
	for {
		if l := c.leaderInstead(ctx, addr); l != "" {
			c.learn(l)
			leave(&movedError{addr: addr, leader: l})
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(probeEvery):
		}
	}
}

// probeAnswer is one replica's answer to a probe.
type probeAnswer struct {
	addr           string
	silent, leader bool
}

// leaderInstead asks every replica at once who it is and returns one
// other than addr that says it leads, provided addr said nothing within
// probeTimeout ("" otherwise).
func (c *Conn) leaderInstead(ctx context.Context, addr string) string {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	answers := make(chan probeAnswer, len(c.addrs))
	for _, a := range c.addrs {
		go func() { answers <- c.probe(ctx, a) }()
	}
	leader, silent := "", false
	for range c.addrs {
		switch ans := <-answers; {
		case ans.addr == addr:
			silent = ans.silent
		case ans.leader:
			leader = ans.addr
		}
	}
	if !silent {
		return ""
	}
	return leader
}

// probe asks the replica at addr for its status: silent when it sent no
// answer at all (not even a refusal) before ctx ended.
func (c *Conn) probe(ctx context.Context, addr string) probeAnswer {
	cc, err := c.conn(addr)
	if err != nil {
		return probeAnswer{addr: addr}
	}
	st := new(phalanxv1.ControllerStatus)
	err = cc.Invoke(ctx, phalanxv1.ControllerService_GetControllerStatus_FullMethodName, &phalanxv1.GetControllerStatusRequest{}, st)
	switch status.Code(err) {
	case codes.OK:
		return probeAnswer{addr: addr, leader: st.GetRole() == RoleLeader}
	case codes.DeadlineExceeded, codes.Canceled, codes.Unavailable:
		return probeAnswer{addr: addr, silent: true}
	}
	return probeAnswer{addr: addr}
}
