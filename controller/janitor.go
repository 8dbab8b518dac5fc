package controller

import (
	"context"

	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// expire proposes forgetting the finished jobs, submit requests and node
// events that outlived their retention. Every replica forgets the same
// ones: the cut-offs are in the command.
func (s *Server) expire(ctx context.Context) {
	now := s.cfg.Clock.Now()
	r := store.Retention{
		RequestsBefore: now.Add(-s.cfg.RequestTTL),
		MaxRequests:    s.cfg.MaxRequests,
		HistoryBefore:  now.Add(-s.cfg.PurgeJobAfter),
		MaxHistory:     s.cfg.MaxJobHistory,
		EventsBefore:   now.Add(-s.cfg.PurgeEventAfter),
		MaxEvents:      s.cfg.MaxEvents,
	}
	if _, err := s.propose(ctx, fsm.Expire{Retention: r}); err != nil {
		s.log.Error("expire old jobs, requests and events", "err", err)
	}
}
