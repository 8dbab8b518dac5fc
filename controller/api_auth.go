package controller

import (
	"context"
	"os/user"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// maxTokenLifespan bounds phx scontrol token lifespan=.
const maxTokenLifespan = 365 * 24 * time.Hour

func (c *controllerService) CreateToken(ctx context.Context, req *phalanxv1.CreateTokenRequest) (*phalanxv1.CreateTokenResponse, error) {
	resp, err := c.s.createToken(ctx, req.Username, time.Duration(req.LifespanSeconds)*time.Second)
	return resp, toStatus(err)
}

// createToken signs a token for the caller, or for username when an
// administrator asks.
func (s *Server) createToken(ctx context.Context, username string, lifespan time.Duration) (*phalanxv1.CreateTokenResponse, error) {
	if s.cfg.Insecure {
		return nil, cluster.Errorf(cluster.ErrInvalid, "this cluster runs without authentication (--insecure): it has no key to sign tokens with")
	}
	switch {
	case lifespan == 0:
		lifespan = auth.DefaultTokenLifespan
	case lifespan < 0 || lifespan > maxTokenLifespan:
		return nil, cluster.Errorf(cluster.ErrInvalid, "lifespan=%d: give seconds, from 1 to %d", int64(lifespan/time.Second), int64(maxTokenLifespan/time.Second))
	}
	id, _, _ := s.access.caller(ctx)
	if username != "" && username != id.User {
		if err := s.access.require(ctx, levelAdmin, "a token for another user"); err != nil {
			return nil, err
		}
		var err error
		if id, err = lookupUser(username); err != nil {
			return nil, err
		}
	}
	id.Kind = auth.KindToken
	now := s.cfg.Clock.Now()
	tok, err := auth.Issue(s.cfg.AuthKeys.Signing(), id, now, lifespan)
	if err != nil {
		return nil, err
	}
	return &phalanxv1.CreateTokenResponse{Token: tok, Expires: timestamppb.New(now.Add(lifespan))}, nil
}

// lookupUser is the identity of a user of this controller's host.
func lookupUser(name string) (auth.Identity, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return auth.Identity{}, cluster.Errorf(cluster.ErrInvalid, "username=%s: no such user on the controller's host", name)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return auth.Identity{}, cluster.Errorf(cluster.ErrInvalid, "username=%s has a non-numeric uid %q or gid %q", name, u.Uid, u.Gid)
	}
	return auth.Identity{User: u.Username, UID: uint32(uid), GID: uint32(gid)}, nil
}
