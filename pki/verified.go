package pki

import (
	"crypto/sha256"
	"crypto/x509"
	"sync"
	"time"
)

// verifiedChains remembers the chains whose signatures checked out against
// one loaded CA bundle. A connection's certificate is checked again by
// every call that relies on it (an agent's heartbeat, each second): the
// validity, revocation and kind checks are repeated each time, the
// signatures' arithmetic (an ECDSA verification per certificate, most of
// a check's cost) only once per chain. An entry holds while every
// certificate of the chain is valid; a reload (a new CA bundle or
// revocation list) starts with none.
type verifiedChains struct {
	mu     sync.Mutex
	chains map[[sha256.Size]byte]validity
	checks int // signature verifications made, for tests
}

// validity is when every certificate of a chain is valid.
type validity struct{ from, until time.Time }

// maxVerifiedChains bounds the memory: past it, the cache starts again
// (a cluster has one certificate per host).
const maxVerifiedChains = 16384

// chainKey identifies the certificates a peer presented.
func chainKey(leaf *x509.Certificate, inter []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range append([]*x509.Certificate{leaf}, inter...) {
		n := len(c.Raw)
		h.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		h.Write(c.Raw)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// holds reports whether the chain keyed k verified, for a time that
// includes now.
func (v *verifiedChains) holds(k [sha256.Size]byte, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	w, ok := v.chains[k]
	return ok && !now.Before(w.from) && !now.After(w.until)
}

// add records that the chain keyed k verified as chain.
func (v *verifiedChains) add(k [sha256.Size]byte, chain []*x509.Certificate) {
	w := validity{}
	for i, c := range chain {
		if i == 0 || c.NotBefore.After(w.from) {
			w.from = c.NotBefore
		}
		if i == 0 || c.NotAfter.Before(w.until) {
			w.until = c.NotAfter
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.chains == nil || len(v.chains) >= maxVerifiedChains {
		v.chains = map[[sha256.Size]byte]validity{}
	}
	v.chains[k] = w
}

// verify runs x509's verification of leaf unless the chain verified
// already, for a time that includes now.
func (v *verifiedChains) verify(leaf *x509.Certificate, inter []*x509.Certificate, roots *x509.CertPool, now time.Time) error {
	k := chainKey(leaf, inter)
	if v.holds(k, now) {
		return nil
	}
	pool := x509.NewCertPool()
	for _, c := range inter {
		pool.AddCert(c)
	}
	v.mu.Lock()
	v.checks++
	v.mu.Unlock()
	chains, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return err
	}
	v.add(k, chains[0])
	return nil
}
