package auth

import (
	"context"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// refreshBefore is how long before its expiry a cached credential is
// replaced.
const refreshBefore = 30 * time.Second

// Source hands a client its credential for each call: fetched once, and
// again shortly before it expires. It implements gRPC's per-call
// credentials, so a connection dialed with grpc.WithPerRPCCredentials(src)
// sends it on every call.
type Source struct {
	fetch func(ctx context.Context) (string, error)
	now   func() time.Time

	mu  sync.Mutex
	tok string
	exp time.Time
}

var _ credentials.PerRPCCredentials = (*Source)(nil)

// NewSource returns a Source that obtains credentials with fetch.
func NewSource(fetch func(ctx context.Context) (string, error)) *Source {
	return &Source{fetch: fetch, now: time.Now}
}

// Static returns a Source for one credential, such as $PHX_TOKEN.
func Static(tok string) *Source {
	return NewSource(func(context.Context) (string, error) { return tok, nil })
}

// Socket returns a Source that asks the auth socket at path.
func Socket(path string) *Source {
	return NewSource(func(ctx context.Context) (string, error) { return Fetch(ctx, path) })
}

// Issuer returns a Source that signs credentials for id with the signing
// key of keys itself (a daemon that holds the key: an agent, a controller
// calling a peer, tests).
func Issuer(keys *Keyring, id Identity, lifespan time.Duration) *Source {
	return NewSource(func(context.Context) (string, error) { return Issue(keys.Signing(), id, time.Now(), lifespan) })
}

// Token returns a valid credential, fetching a new one when needed.
func (s *Source) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok != "" && s.now().Before(s.exp.Add(-refreshBefore)) {
		return s.tok, nil
	}
	tok, err := s.fetch(ctx)
	if err != nil {
		return "", err
	}
	s.tok, s.exp = tok, expiry(tok)
	return tok, nil
}

// expiry reads a credential's expiry without checking its signature (a
// client cannot: it has no key); zero when it has none, so that it is
// fetched again at the next call.
func expiry(tok string) time.Time {
	var c jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil || c.ExpiresAt == nil {
		return time.Time{}
	}
	return c.ExpiresAt.Time
}

// GetRequestMetadata implements credentials.PerRPCCredentials. A
// credential that cannot be had fails the call as Unauthenticated, which a
// client does not retry on another replica.
func (s *Source) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	tok, err := s.Token(ctx)
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, err.Error())
	}
	return map[string]string{MetadataKey: tok}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (s *Source) RequireTransportSecurity() bool { return false }

// Claimed reads whom a credential names without checking its signature:
// for a client, which has no key, to put the same owner in its requests
// (a job submitted with $PHX_TOKEN runs as the token's user, who may have
// another uid on the cluster than here). The controller checks it.
func Claimed(tok string) (Identity, bool) {
	var c claims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil || c.User == "" {
		return Identity{}, false
	}
	return Identity{User: c.User, UID: c.UID, GID: c.GID, Kind: c.Kind}, true
}
