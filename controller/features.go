package controller

import (
	"context"
	"fmt"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// Feature levels (store.FeatureLevel). While an upgrade rolls, replicas of
// two releases apply the same log; what a newer release's apply does more
// (record a job's requeue as an event) waits until the state's feature
// level says so. A leader raises the level to the highest every member of
// the Raft configuration reports (GetControllerStatus), asking again every
// featureRetry until it can: a replica of an earlier release reports none,
// and holds the level back until it is upgraded or removed.

// featureRetry is how long a leader waits to ask the members again.
var featureRetry = 2 * time.Second

// featureLevel is the highest level this replica reports.
func (s *Server) featureLevel() uint64 {
	if s.cfg.FeatureLevel != nil {
		return min(*s.cfg.FeatureLevel, store.FeatureLevel)
	}
	return store.FeatureLevel
}

// raiseAlone raises the state's feature level to this replica's when it
// is the only member (a new cluster's first replica, phx dev), before it
// serves as leader: there is nobody to ask, and its first jobs are then
// handled at its level.
func (s *Server) raiseAlone(ctx context.Context) {
	if servers, err := s.members(ctx); err == nil && len(servers) == 1 && string(servers[0].ID) == s.ID() {
		s.raiseTo(ctx, s.featureLevel())
	}
}

// raiseTo proposes raising the state's feature level to level, if above.
func (s *Server) raiseTo(ctx context.Context, level uint64) {
	if level <= s.store.FeatureLevel() {
		return
	}
	if _, err := s.propose(ctx, fsm.SetFeatureLevel{Level: level}); err != nil {
		s.log.Error("raise the feature level", "level", level, "err", err)
		return
	}
	s.log.Info("feature level raised", "level", level)
}

// raiseFeatureLevel raises the state's feature level as far as every
// member knows, while this replica leads (ctx).
func (s *Server) raiseFeatureLevel(ctx context.Context) {
	said := ""
	for {
		level, err := s.membersLevel(ctx)
		switch {
		case err != nil && err.Error() != said: // once per reason
			said = err.Error()
			s.log.Info("feature level stays", "level", s.store.FeatureLevel(), "err", err)
		case err == nil && level < s.featureLevel() && said != "held":
			said = "held"
			s.log.Info("feature level held back by a member's release", "level", s.store.FeatureLevel(), "members", level)
		}
		if err == nil {
			s.raiseTo(ctx, level)
		}
		if s.store.FeatureLevel() >= s.featureLevel() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(featureRetry):
		}
	}
}

// membersLevel is the lowest feature level the members of the Raft
// configuration report, this replica's included.
func (s *Server) membersLevel(ctx context.Context) (uint64, error) {
	servers, err := s.members(ctx)
	if err != nil {
		return 0, err
	}
	level := s.featureLevel()
	for _, srv := range servers {
		id := string(srv.ID)
		if id == s.ID() {
			continue
		}
		c, ok := s.store.Controller(id)
		if !ok || c.APIAddr == "" {
			return 0, fmt.Errorf("controller %s has not registered its API address yet", id)
		}
		conn, err := s.peerConns.get(c.APIAddr)
		if err != nil {
			return 0, fmt.Errorf("controller %s: %w", id, err)
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := phalanxv1.NewControllerServiceClient(conn).GetControllerStatus(asController(cctx, s.peerCred), &phalanxv1.GetControllerStatusRequest{})
		cancel()
		if err != nil {
			return 0, fmt.Errorf("controller %s: %w", id, err)
		}
		level = min(level, st.GetFeatureLevel())
	}
	return level, nil
}
