package pki

import (
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestStepCredential(t *testing.T) {
	ca, caDir := newCA(t)
	ctl, _ := issueTo(t, ca, caDir, KindController, "ctl1", time.Hour)
	agent, agentDir := issueTo(t, ca, caDir, KindNode, "gpu001", time.Hour)
	other, otherDir := newCA(t)
	foreign, _ := issueTo(t, other, otherDir, KindController, "ctl1", time.Hour)
	nodeSigner, _ := issueTo(t, ca, caDir, KindNode, "gpu002", time.Hour)

	now := time.Now()
	grant := StepGrant{Job: 42, Step: 100000, Node: "gpu001", UID: 1001, GID: 1001, Argv: []string{"nvidia-smi", "-L"}}
	tok, err := ctl.SignStep(grant, now)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := agent.VerifyStep(tok, grant, now)
	if err != nil {
		t.Fatalf("a good credential: %v", err)
	}
	if signer.Kind != KindController || signer.Name != "ctl1" {
		t.Errorf("signer = %v, want controller ctl1", signer)
	}

	with := func(f func(*StepGrant)) StepGrant {
		g := grant
		g.Argv = append([]string(nil), grant.Argv...)
		f(&g)
		return g
	}
	refusals := []struct {
		name string
		tok  string
		want StepGrant
		at   time.Time
		says string
	}{
		{"another node", tok, with(func(g *StepGrant) { g.Node = "gpu002" }), now, "another node than gpu002"},
		{"another job", tok, with(func(g *StepGrant) { g.Job = 43 }), now, "another job than 43"},
		{"another user", tok, with(func(g *StepGrant) { g.UID = 0 }), now, "uid 1001"},
		{"another step", tok, with(func(g *StepGrant) { g.Step = 7 }), now, "step 100000"},
		{"another command", tok, with(func(g *StepGrant) { g.Argv = []string{"nvidia-smi", "-L", "x"} }), now, "another command"},
		{"command split differently", tok, with(func(g *StepGrant) { g.Argv = []string{"nvidia-smi -L"} }), now, "another command"},
		{"expired", tok, grant, now.Add(StepLifespan + time.Second), "expired"},
		{"garbage", "a.b.c", grant, now, "refused"},
		{"tampered", tamper(t, tok), grant, now, "signature"},
	}
	for _, r := range refusals {
		_, err := agent.VerifyStep(r.tok, r.want, r.at)
		if err == nil || !strings.Contains(err.Error(), r.says) {
			t.Errorf("%s: %v, want an error saying %q", r.name, err, r.says)
		}
	}

	// Signed by a controller of another cluster, by a node, or with no
	// certificate chain: refused.
	ftok, err := foreign.SignStep(grant, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.VerifyStep(ftok, grant, now); err == nil || !strings.Contains(err.Error(), "not from this cluster's CA") {
		t.Errorf("another cluster's controller: %v", err)
	}
	if _, err := nodeSigner.SignStep(grant, now); err == nil {
		t.Error("a node signed a step credential")
	}
	forged := nodeForgery(t, nodeSigner, grant, now)
	if _, err := agent.VerifyStep(forged, grant, now); err == nil || !strings.Contains(err.Error(), "wrong kind") {
		t.Errorf("a credential a node signed with its own certificate: %v", err)
	}
	bare := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": "job/42"})
	bareTok, _ := bare.SignedString(ctl.cur.Load().cert.PrivateKey)
	if _, err := agent.VerifyStep(bareTok, grant, now); err == nil || !strings.Contains(err.Error(), "x5c") {
		t.Errorf("no certificate chain: %v", err)
	}

	// A revoked controller certificate: refused once the agent has the list.
	if err := ca.Revoke(ctl.cur.Load().cert.Leaf.SerialNumber, now); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(caDir, CRLFile), filepath.Join(agentDir, CRLFile))
	if err := agent.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.VerifyStep(tok, grant, now); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a revoked controller's credential: %v", err)
	}
}

// tamper changes the claims of a token and keeps its signature.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	claims, err := jwt.NewParser().DecodeSegment(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(claims), `"uid":1001`, `"uid":1002`, 1)))
	return strings.Join(parts, ".")
}

// nodeForgery signs grant as SignStep would, with a node's certificate.
func nodeForgery(t *testing.T, m *Material, g StepGrant, now time.Time) string {
	t.Helper()
	l := *m.cur.Load()
	l.self.Kind = KindController // what SignStep checks, not what the certificate says
	forger := &Material{}
	forger.cur.Store(&l)
	tok, err := forger.SignStep(g, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
