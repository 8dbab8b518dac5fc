package pki

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Step credentials: Slurm's job credential. A command started in a running
// job from outside it (phx srun --jobid) reaches a node's agent from the
// leader, which signs, for each node, what the agent may start: which job,
// as which user, which command, until when. The agent runs it only with a
// valid credential for itself, so what starts a process on a node is a
// controller's signature, checked against the cluster CA, not only the
// connection it arrived on.

// StepLifespan is how long a step credential is valid: long enough to
// reach the agent, too short to keep for later.
const StepLifespan = time.Minute

// StepGrant is what a step credential allows.
type StepGrant struct {
	Job      uint64
	Step     uint32
	Node     string // the agent that may run it
	UID, GID int
	Argv     []string
}

type stepClaims struct {
	jwt.RegisteredClaims
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	Step uint32 `json:"step"`
	Argv string `json:"argv"` // ArgvDigest of the command
}

// ArgvDigest is the SHA-256 of a command's words, each ended by a NUL.
func ArgvDigest(argv []string) string {
	h := sha256.New()
	for _, a := range argv {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SignStep signs g with the material's own certificate, which must be a
// controller's; the certificate chain travels in the token's x5c header.
func (m *Material) SignStep(g StepGrant, now time.Time) (string, error) {
	l := m.cur.Load()
	if l.cert == nil || l.self.Kind != KindController {
		return "", errors.New("step credentials are signed by a controller's certificate, and this daemon has none")
	}
	key, ok := l.cert.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return "", fmt.Errorf("the controller's key is a %T, not the ECDSA key `ca issue` makes", l.cert.PrivateKey)
	}
	claims := stepClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    l.self.Name,
			Subject:   "job/" + strconv.FormatUint(g.Job, 10),
			Audience:  jwt.ClaimStrings{g.Node},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(StepLifespan)),
		},
		UID: g.UID, GID: g.GID, Step: g.Step, Argv: ArgvDigest(g.Argv),
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	chain := make([]string, len(l.cert.Certificate))
	for i, der := range l.cert.Certificate {
		chain[i] = base64.StdEncoding.EncodeToString(der)
	}
	tok.Header["x5c"] = chain
	return tok.SignedString(key)
}

// VerifyStep checks a step credential for want: signed by the key of a
// controller certificate that the cluster CA issued and that is neither
// expired nor revoked; not expired itself; and naming exactly want's job,
// step, node, user, group and command. It returns the signing controller.
func (m *Material) VerifyStep(tok string, want StepGrant, now time.Time) (Peer, error) {
	var signer Peer
	claims := &stepClaims{}
	_, err := jwt.ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		chain, err := x5c(t.Header["x5c"])
		if err != nil {
			return nil, err
		}
		if signer, err = m.Check(chain, KindController); err != nil {
			return nil, err
		}
		return chain[0].PublicKey, nil
	}, jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}), jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithExpirationRequired(), jwt.WithAudience(want.Node), jwt.WithSubject("job/"+strconv.FormatUint(want.Job, 10)))
	switch {
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return signer, fmt.Errorf("step credential refused: it was signed for another node than %s", want.Node)
	case errors.Is(err, jwt.ErrTokenInvalidSubject):
		return signer, fmt.Errorf("step credential refused: it was signed for another job than %d", want.Job)
	case errors.Is(err, jwt.ErrTokenExpired):
		return signer, fmt.Errorf("step credential refused: it expired (a step credential is valid for %s: are the clocks of controllers and nodes apart?)", StepLifespan)
	case err != nil:
		return signer, fmt.Errorf("step credential refused: %w", err)
	}
	switch {
	case claims.ExpiresAt.Sub(claims.IssuedAt.Time) > StepLifespan:
		return signer, fmt.Errorf("step credential refused: valid for %s, more than a step credential's %s", claims.ExpiresAt.Sub(claims.IssuedAt.Time), StepLifespan)
	case claims.UID != want.UID || claims.GID != want.GID:
		return signer, fmt.Errorf("step credential refused: it is for uid %d gid %d, and job %d runs as uid %d gid %d", claims.UID, claims.GID, want.Job, want.UID, want.GID)
	case claims.Step != want.Step:
		return signer, fmt.Errorf("step credential refused: it is for step %d, not %d", claims.Step, want.Step)
	case claims.Argv != ArgvDigest(want.Argv):
		return signer, fmt.Errorf("step credential refused: it was signed for another command than %q", strings.Join(want.Argv, " "))
	}
	return signer, nil
}

// x5c decodes a JWT x5c header: base64 DER certificates, leaf first.
func x5c(h any) ([]*x509.Certificate, error) {
	list, ok := h.([]any)
	if !ok || len(list) == 0 {
		return nil, errors.New("no certificate chain (x5c header)")
	}
	chain := make([]*x509.Certificate, 0, len(list))
	for _, v := range list {
		s, _ := v.(string)
		der, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("x5c header: %w", err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("x5c header: %w", err)
		}
		chain = append(chain, c)
	}
	return chain, nil
}
