package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// membershipTimeout bounds a Raft membership change when the caller gave no
// deadline.
const membershipTimeout = 10 * time.Second

func (c *controllerService) GetControllerStatus(ctx context.Context, req *phalanxv1.GetControllerStatusRequest) (*phalanxv1.ControllerStatus, error) {
	return c.s.status(), nil
}

// status describes this replica.
func (s *Server) status() *phalanxv1.ControllerStatus {
	r := s.raft.raft
	_, leader := r.LeaderWithID()
	out := &phalanxv1.ControllerStatus{
		Id:           s.ID(),
		ApiAddr:      s.apiAddr,
		RaftAddr:     s.RaftAddr(),
		Role:         roleName(r.State()),
		AppliedIndex: s.store.AppliedIndex(),
		CommitIndex:  r.CommitIndex(),
		LastLogIndex: r.LastIndex(),
		LeaderId:     string(leader),
		DurableIndex: s.store.DurableIndex(),
		FeatureLevel: s.featureLevel(),
	}
	if term, err := parseUint(r.Stats()["term"]); err == nil {
		out.Term = term
	}
	if t := r.LastContact(); !t.IsZero() && r.State() != raft.Leader {
		out.LastContact = ts(t)
	}
	return out
}

func roleName(st raft.RaftState) string {
	switch st {
	case raft.Leader:
		return apiclient.RoleLeader
	case raft.Follower:
		return "Follower"
	case raft.Candidate:
		return "Candidate"
	}
	return roleShutdown
}

// roleShutdown is the role of a replica whose Raft has stopped: it runs
// no election and takes no part in any.
const roleShutdown = "Shutdown"

// ListControllers lists the members of this replica's Raft configuration,
// each with its status read just now (in parallel, a second at most). A
// replica outside its own configuration (one waiting to be added, or one
// removed and still running) does not know the members: it answers
// NotLeader, with the leader's address when it knows it, and the client
// asks another replica.
func (c *controllerService) ListControllers(ctx context.Context, req *phalanxv1.ListControllersRequest) (*phalanxv1.ListControllersResponse, error) {
	s := c.s
	f := s.raft.raft.GetConfiguration()
	if err := waitFuture(ctx, f); err != nil {
		return nil, toStatus(err)
	}
	servers := f.Configuration().Servers
	if !hasMember(servers, s.raft.id) {
		return nil, toStatus(s.notMember())
	}
	out := &phalanxv1.ListControllersResponse{Controllers: make([]*phalanxv1.ControllerInfo, len(servers))}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i, srv := range servers {
		info := &phalanxv1.ControllerInfo{Id: string(srv.ID), RaftAddr: string(srv.Address), Voter: srv.Suffrage == raft.Voter}
		out.Controllers[i] = info
		if srv.ID == s.raft.id {
			info.ApiAddr, info.Status = s.apiAddr, s.status()
			info.Reachable = info.Status.Role != roleShutdown
			continue
		}
		rec, _ := s.store.Controller(string(srv.ID))
		info.ApiAddr = rec.APIAddr
		if info.ApiAddr == "" {
			info.Error = "its API address is not recorded yet"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := s.peerConns.get(info.ApiAddr)
			if err == nil {
				info.Status, err = phalanxv1.NewControllerServiceClient(conn).GetControllerStatus(asController(ctx, s.peerCred), &phalanxv1.GetControllerStatusRequest{})
			}
			switch {
			case err != nil:
				info.Error = err.Error()
			case info.Status.GetRole() == roleShutdown:
				info.Error = "it answers, but its Raft has shut down: restart it"
			default:
				info.Reachable = true
			}
		}()
	}
	wg.Wait()
	return out, nil
}

// hasMember reports whether id is one of servers.
func hasMember(servers []raft.Server, id raft.ServerID) bool {
	for _, srv := range servers {
		if srv.ID == id {
			return true
		}
	}
	return false
}

func (c *controllerService) AddController(ctx context.Context, req *phalanxv1.AddControllerRequest) (*phalanxv1.AddControllerResponse, error) {
	s := c.s
	if req.Id == "" || req.RaftAddr == "" {
		return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "give the new controller's ID and Raft address: raft add ID HOST:PORT"))
	}
	if err := checkMemberAddrs(req.RaftAddr, req.ApiAddr); err != nil {
		return nil, toStatus(err)
	}
	if err := s.checkNewMember(ctx, req.Id, req.RaftAddr, req.ApiAddr); err != nil {
		return nil, toStatus(err)
	}
	ctx, cancel := withDefaultTimeout(ctx, membershipTimeout)
	defer cancel()
	f := s.raft.raft.AddVoter(raft.ServerID(req.Id), raft.ServerAddress(req.RaftAddr), 0, timeLeft(ctx))
	if err := s.membershipErr(waitFuture(ctx, f)); err != nil {
		return nil, toStatus(err)
	}
	s.log.Info("controller added", "id", req.Id, "raft", req.RaftAddr)
	if req.ApiAddr != "" {
		ctl := store.Controller{ID: req.Id, APIAddr: req.ApiAddr, RaftAddr: req.RaftAddr}
		if _, err := s.propose(ctx, fsm.SetController{Controller: ctl}); err != nil {
			return nil, toStatus(err)
		}
	}
	return &phalanxv1.AddControllerResponse{}, nil
}

// checkNewMember refuses an add that would change a member rather than add
// one: Raft's AddVoter moves a member given its ID to the address given,
// and a second ID at a member's address makes a phantom voter that counts
// against the majority.
func (s *Server) checkNewMember(ctx context.Context, id, addr, apiAddr string) error {
	servers, err := s.members(ctx)
	if err != nil {
		return err
	}
	for _, srv := range servers {
		switch {
		case string(srv.ID) == id && string(srv.Address) == addr:
			return cluster.Errorf(cluster.ErrConflict, "controller %q is already a member, at %s", id, addr)
		case string(srv.ID) == id:
			return cluster.Errorf(cluster.ErrConflict, "controller %q is already a member, at %s: to move it to %s, remove it first (phx scontrol raft remove %s)", id, srv.Address, addr, id)
		case string(srv.Address) == addr:
			return cluster.Errorf(cluster.ErrConflict, "%s is the Raft address of member %s: give controller %q its own", addr, srv.ID, id)
		}
		if c, ok := s.store.Controller(string(srv.ID)); ok && apiAddr != "" && c.APIAddr == apiAddr {
			return cluster.Errorf(cluster.ErrConflict, "%s is the API address of member %s: give controller %q its own", apiAddr, srv.ID, id)
		}
	}
	return nil
}

// checkMemberAddrs refuses a new member's address that cannot be dialled:
// the cluster would count a voter that can never answer, and one voter
// alone would have lost its quorum to it.
func checkMemberAddrs(raftAddr, apiAddr string) error {
	if err := apiclient.CheckHostPort(raftAddr); err != nil {
		return cluster.Errorf(cluster.ErrInvalid, "the Raft address %v: raft add ID HOST:PORT", err)
	}
	if err := apiclient.CheckHostPort(apiAddr); apiAddr != "" && err != nil {
		return cluster.Errorf(cluster.ErrInvalid, "the API address %v: raft add ID HOST:PORT API_HOST:PORT", err)
	}
	return nil
}

// members is the Raft configuration's servers, as this replica has it.
func (s *Server) members(ctx context.Context) ([]raft.Server, error) {
	cf := s.raft.raft.GetConfiguration()
	if err := waitFuture(ctx, cf); err != nil {
		return nil, err
	}
	return cf.Configuration().Servers, nil
}

func (c *controllerService) RemoveController(ctx context.Context, req *phalanxv1.RemoveControllerRequest) (*phalanxv1.RemoveControllerResponse, error) {
	s := c.s
	servers, err := s.members(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	member, voters := false, 0
	for _, srv := range servers {
		member = member || string(srv.ID) == req.Id
		if srv.Suffrage == raft.Voter {
			voters++
		}
	}
	switch {
	case !member:
		return nil, toStatus(cluster.Errorf(cluster.ErrNotFound, "controller %q is not a member (phx scontrol show controllers lists them)", req.Id))
	case voters == 1:
		return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "controller %q is the only voter: add another before removing it", req.Id))
	}
	ctx, cancel := withDefaultTimeout(ctx, membershipTimeout)
	defer cancel()
	f := s.raft.raft.RemoveServer(raft.ServerID(req.Id), 0, timeLeft(ctx))
	if err := s.membershipErr(waitFuture(ctx, f)); err != nil {
		return nil, toStatus(err)
	}
	s.log.Info("controller removed", "id", req.Id)
	if req.Id != s.ID() { // a leader that removed itself no longer leads
		if _, err := s.propose(ctx, fsm.RemoveController{ID: req.Id}); err != nil {
			return nil, toStatus(err)
		}
	}
	return &phalanxv1.RemoveControllerResponse{}, nil
}

// RegisterController records a member's addresses so that others can
// forward to it and list it; a replica that is not a member is refused.
func (c *controllerService) RegisterController(ctx context.Context, req *phalanxv1.RegisterControllerRequest) (*phalanxv1.RegisterControllerResponse, error) {
	s := c.s
	servers, err := s.members(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	member := false
	for _, srv := range servers {
		member = member || string(srv.ID) == req.Id
	}
	if !member {
		return nil, toStatus(cluster.Errorf(cluster.ErrUnsatisfiable,
			"controller %q is not a member of the cluster: add it with phx scontrol raft add %s %s", req.Id, req.Id, req.RaftAddr))
	}
	ctl := store.Controller{ID: req.Id, APIAddr: req.ApiAddr, RaftAddr: req.RaftAddr}
	if have, ok := s.store.Controller(req.Id); ok && have == ctl {
		return &phalanxv1.RegisterControllerResponse{}, nil
	}
	if _, err := s.propose(ctx, fsm.SetController{Controller: ctl}); err != nil {
		return nil, toStatus(err)
	}
	return &phalanxv1.RegisterControllerResponse{}, nil
}

// membershipErr words a failed membership change.
func (s *Server) membershipErr(err error) error {
	switch {
	case err == nil:
		return nil
	case err == raft.ErrNotLeader || err == raft.ErrLeadershipLost:
		return s.notLeader()
	case err == raft.ErrCantBootstrap || err == raft.ErrAbortedByRestore:
		return cluster.Errorf(cluster.ErrConflict, "membership change: %v", err)
	}
	return err
}

func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func timeLeft(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return 0
}

// TransferLeadership hands leadership to another voter: the one named, or
// the most up to date (Raft's leadership transfer: the target is brought up
// to date, then told to start an election at once). Used before upgrading
// or stopping the leader's host, so that the cluster does not wait out an
// election timeout.
func (c *controllerService) TransferLeadership(ctx context.Context, req *phalanxv1.TransferLeadershipRequest) (*phalanxv1.TransferLeadershipResponse, error) {
	s := c.s
	ctx, cancel := withDefaultTimeout(ctx, membershipTimeout)
	defer cancel()
	var f raft.Future
	if req.Id == "" {
		servers, err := s.members(ctx)
		if err != nil {
			return nil, toStatus(err)
		}
		if !slices.ContainsFunc(servers, func(srv raft.Server) bool { return srv.ID != s.raft.id && srv.Suffrage == raft.Voter }) {
			// Raft would say only "cannot find peer".
			return nil, toStatus(cluster.Errorf(cluster.ErrConflict, "controller %q is the only voter: there is no other replica to lead (phx scontrol raft add one first)", s.ID()))
		}
		f = s.raft.raft.LeadershipTransfer()
	} else {
		if req.Id == s.ID() {
			return nil, toStatus(cluster.Errorf(cluster.ErrConflict, "controller %q already leads", req.Id))
		}
		servers, err := s.members(ctx)
		if err != nil {
			return nil, toStatus(err)
		}
		var addr raft.ServerAddress
		for _, srv := range servers {
			if string(srv.ID) == req.Id && srv.Suffrage == raft.Voter {
				addr = srv.Address
			}
		}
		if addr == "" {
			return nil, toStatus(cluster.Errorf(cluster.ErrNotFound, "controller %q is not a voter (phx scontrol show controllers lists them)", req.Id))
		}
		f = s.raft.raft.LeadershipTransferToServer(raft.ServerID(req.Id), addr)
	}
	if err := s.membershipErr(waitFuture(ctx, f)); err != nil {
		if req.Id != "" && !errors.Is(err, cluster.ErrNotLeader) {
			// Raft says only "leadership transfer timeout" when the
			// target never answered or never caught up.
			return nil, toStatus(cluster.Errorf(cluster.ErrConflict, "leadership transfer to %s: %v: is %s running and caught up? (phx scontrol show controllers)", req.Id, err, req.Id))
		}
		return nil, toStatus(fmt.Errorf("leadership transfer: %w", err))
	}
	// The transfer is done when the target has won its election; this
	// replica learns who leads from the new leader's first heartbeat.
	for {
		if _, leader := s.raft.raft.LeaderWithID(); leader != "" && leader != s.raft.id {
			s.log.Info("leadership transferred", "to", leader)
			return &phalanxv1.TransferLeadershipResponse{LeaderId: string(leader)}, nil
		}
		select {
		case <-ctx.Done():
			return nil, toStatus(fmt.Errorf("leadership transfer: the new leader is not known yet: %w", ctx.Err()))
		case <-time.After(10 * time.Millisecond):
		}
	}
}
