package testcluster_test

import (
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// credential dials the cluster of s over TLS with credentials for id
// signed with k.
func credential(t *testing.T, s *testcluster.Secrets, k auth.Key, id auth.Identity, lifespan time.Duration) []apiclient.Option {
	t.Helper()
	return []apiclient.Option{apiclient.WithDialOptions(s.Transport(nil), grpc.WithPerRPCCredentials(auth.Issuer(auth.Ring(k), id, lifespan)))}
}

// staticCredential dials the cluster of s over TLS with one given
// credential.
func staticCredential(s *testcluster.Secrets, tok string) []apiclient.Option {
	return []apiclient.Option{apiclient.WithDialOptions(s.Transport(nil), grpc.WithPerRPCCredentials(auth.Static(tok)))}
}

// noCredential dials the cluster of s over TLS with no credential.
func noCredential(s *testcluster.Secrets) []apiclient.Option {
	return []apiclient.Option{apiclient.WithDialOptions(s.Transport(nil))}
}
