package auth

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Kind says how a credential was obtained.
type Kind string

const (
	// KindLocal: from a daemon's auth socket, for the uid the kernel named.
	KindLocal Kind = "local"
	// KindToken: signed by the controller on request (phx scontrol token).
	KindToken Kind = "token"
	// KindController: minted by a controller for its own calls to a peer.
	KindController Kind = "controller"
	// KindNode: minted by a node's agent for its calls to the node API; it
	// names the node, and speaks for that node only.
	KindNode Kind = "node"
)

// Identity is who a credential speaks for.
type Identity struct {
	User string // user name, as the issuing host knows it
	UID  uint32
	GID  uint32
	Kind Kind
	Node string // the node a KindNode credential speaks for
}

func (id Identity) String() string {
	if id.Kind == KindNode {
		return "node " + id.Node
	}
	return fmt.Sprintf("%s (uid %d)", id.User, id.UID)
}

// NodeIdentity is the identity of node name's agent.
func NodeIdentity(name string) Identity {
	return Identity{User: "node:" + name, Kind: KindNode, Node: name}
}

// Lifespans of credentials.
const (
	// LocalLifespan is how long a credential from an auth socket lasts
	// (MUNGE's default TTL).
	LocalLifespan = 5 * time.Minute
	// DefaultTokenLifespan is the lifespan of phx scontrol token when none
	// is given (Slurm's default).
	DefaultTokenLifespan = 30 * time.Minute
	// clockSkew is how far apart the clocks of the issuing host and the
	// controller may be.
	clockSkew = 30 * time.Second
)

// issuer names the credentials of this package.
const issuer = "phalanx"

// claims is a credential's payload. "sun" is Slurm's claim for the user
// name.
type claims struct {
	jwt.RegisteredClaims
	User string `json:"sun"`
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
	Kind Kind   `json:"knd"`
	Node string `json:"nod,omitempty"`
}

// Issue signs a credential for id, valid from now for lifespan.
func Issue(k Key, id Identity, now time.Time, lifespan time.Duration) (string, error) {
	if len(k) < MinKeySize {
		return "", fmt.Errorf("cluster key of %d bytes: at least %d are needed", len(k), MinKeySize)
	}
	if lifespan <= 0 {
		return "", fmt.Errorf("credential lifespan %s: must be positive", lifespan)
	}
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   strconv.FormatUint(uint64(id.UID), 10),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(lifespan)),
		},
		User: id.User, UID: id.UID, GID: id.GID, Kind: id.Kind, Node: id.Node,
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	t.Header["kid"] = keyID(k)
	return t.SignedString([]byte(k))
}

// Errors of Verify, wrapped with details.
var (
	ErrNoCredential = errors.New("no credential")
	ErrExpired      = errors.New("credential expired")
	ErrInvalid      = errors.New("invalid credential")
	// ErrWrongKey, with ErrInvalid: the credential is well formed but not
	// signed with any key of this cluster.
	ErrWrongKey = errors.New("not signed with this cluster's key")
)

// Verify checks a credential's signature (with k) and lifetime at now,
// and returns whom it names.
func Verify(k Key, token string, now time.Time) (Identity, error) {
	id, _, err := verify(Ring(k), token, now)
	return id, err
}

// verify checks a credential against the key of r its key ID names, and
// returns whom it names and when it expires.
func verify(r *Keyring, token string, now time.Time) (Identity, time.Time, error) {
	if token == "" {
		return Identity{}, time.Time{}, ErrNoCredential
	}
	var c claims
	var unknown error
	keyFor := func(t *jwt.Token) (any, error) {
		id, _ := t.Header["kid"].(string)
		k, ok := r.lookup(id)
		if !ok {
			unknown = errUnknownKey(id)
			return nil, unknown
		}
		return []byte(k), nil
	}
	_, err := jwt.ParseWithClaims(token, &c, keyFor,
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(issuer),
		jwt.WithLeeway(clockSkew),
		jwt.WithTimeFunc(func() time.Time { return now }))
	switch {
	case unknown != nil:
		return Identity{}, time.Time{}, unknown
	case errors.Is(err, jwt.ErrTokenExpired):
		return Identity{}, time.Time{}, fmt.Errorf("%w at %s", ErrExpired, c.ExpiresAt.Time.UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return Identity{}, time.Time{}, fmt.Errorf("%w: %w", ErrInvalid, ErrWrongKey)
	case err != nil:
		return Identity{}, time.Time{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch c.Kind {
	case KindLocal, KindToken, KindController:
	case KindNode:
		if c.Node == "" {
			return Identity{}, time.Time{}, fmt.Errorf("%w: a node credential that names no node", ErrInvalid)
		}
	default:
		return Identity{}, time.Time{}, fmt.Errorf("%w: unknown kind %q", ErrInvalid, c.Kind)
	}
	if c.Subject != strconv.FormatUint(uint64(c.UID), 10) {
		return Identity{}, time.Time{}, fmt.Errorf("%w: subject %q does not match uid %d", ErrInvalid, c.Subject, c.UID)
	}
	return Identity{User: c.User, UID: c.UID, GID: c.GID, Kind: c.Kind, Node: c.Node}, c.ExpiresAt.Time, nil
}
