package testcluster_test

import (
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
)

// credential dials with credentials for id signed with k.
func credential(t *testing.T, k auth.Key, id auth.Identity, lifespan time.Duration) []apiclient.Option {
	t.Helper()
	return []apiclient.Option{apiclient.WithDialOptions(grpc.WithPerRPCCredentials(auth.Issuer(auth.Ring(k), id, lifespan)))}
}

// staticCredential dials with one given credential.
func staticCredential(tok string) []apiclient.Option {
	return []apiclient.Option{apiclient.WithDialOptions(grpc.WithPerRPCCredentials(auth.Static(tok)))}
}
