package auth

import (
	"context"

	"google.golang.org/grpc/metadata"
)

// MetadataKey carries a call's credential. Its "phalanx-" prefix makes a
// replica forward it with the call to the leader.
const MetadataKey = "phalanx-auth"

type ctxKey struct{}

// NewContext returns ctx carrying the caller's verified identity.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity NewContext stored, if any.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}

// Incoming returns the credential a call carries, or "".
func Incoming(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(MetadataKey); len(v) == 1 {
		return v[0]
	}
	return ""
}

// Outgoing returns ctx with tok as the credential of calls made with it.
func Outgoing(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, MetadataKey, tok)
}
