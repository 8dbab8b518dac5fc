package controller

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/store"
)

// registerSelf makes sure the replicated state records this replica's
// addresses: other replicas forward to it by them when it leads, and list
// it. It asks the cluster (through its own API, which forwards to the
// leader) until the record matches, then checks again now and then (the
// record may be lost when the replica is removed and added back).
func (s *Server) registerSelf() {
	want := store.Controller{ID: s.ID(), APIAddr: s.apiAddr, RaftAddr: s.RaftAddr()}
	for {
		wait := 30 * time.Second
		if have, ok := s.store.Controller(want.ID); !ok || have != want {
			if err := s.register(want); err != nil {
				s.log.Debug("register this controller's addresses; retrying", "err", err)
				wait = time.Second
			}
		}
		wait += time.Duration(rand.Int64N(int64(wait / 4)))
		select {
		case <-s.stop:
			return
		case <-time.After(wait):
		}
	}
}

func (s *Server) register(c store.Controller) error {
	conn, err := s.peerConns.get(s.apiAddr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = phalanxv1.NewControllerServiceClient(conn).RegisterController(asController(ctx, s.peerCred),
		&phalanxv1.RegisterControllerRequest{Id: c.ID, ApiAddr: c.APIAddr, RaftAddr: c.RaftAddr})
	return err
}

func parseUint(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }
