package cli

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

func (f *fakeController) CreateToken(_ context.Context, req *phalanxv1.CreateTokenRequest) (*phalanxv1.CreateTokenResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = append(f.tokens, req)
	return &phalanxv1.CreateTokenResponse{Token: "signed-for-" + req.Username}, nil
}

func TestScontrolToken(t *testing.T) {
	f, addr := startFake(t)
	sys, stdout, stderr := testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"phx", "scontrol", "token", "lifespan=3600", "username=bob"}); code != 0 {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	if got, want := stdout.String(), "PHX_TOKEN=signed-for-bob\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	sent := &phalanxv1.CreateTokenRequest{Username: "bob", LifespanSeconds: 3600}
	if len(f.tokens) != 1 || !proto.Equal(f.tokens[0], sent) {
		t.Errorf("sent %v, want %v", f.tokens, sent)
	}
	for _, args := range [][]string{{"lifespan=-5"}, {"lifespan=soon"}, {"username="}, {"user=bob"}} {
		sys, _, stderr := testSystem(t, addr)
		if code := Run(context.Background(), sys, append([]string{"phx", "scontrol", "token"}, args...)); code == 0 || !strings.Contains(stderr.String(), "scontrol token [username=NAME] [lifespan=SECONDS]") {
			t.Errorf("%v: code %d, stderr %q; want the usage", args, code, stderr)
		}
	}
}

// Without $PHX_TOKEN and without an auth socket, phx says how to get a
// credential, and sends nothing.
func TestNoCredential(t *testing.T) {
	f, addr := startFake(t)
	sys, _, stderr := testSystem(t, addr)
	env := map[string]string{"PHX_SERVER": addr, "PHX_AUTH_SOCKET": t.TempDir() + "/none.sock", "PHX_INSECURE": "1"}
	sys.Getenv = func(k string) string { return env[k] }
	if code := Run(context.Background(), sys, []string{"phx", "squeue"}); code != 1 || !strings.Contains(stderr.String(), "no Phalanx auth socket") || !strings.Contains(stderr.String(), "PHX_TOKEN") {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	if len(f.lists) != 0 {
		t.Fatalf("sent %v without a credential", f.lists)
	}
}

// Without the cluster CA's certificate phx does not call at all (no
// plaintext fallback that would send the credential in clear), and says
// where the file goes; PHX_INSECURE=1 is the explicit way to plaintext.
func TestNoClusterCA(t *testing.T) {
	f, addr := startFake(t)
	sys, _, stderr := testSystem(t, addr)
	missing := t.TempDir() + "/ca.crt"
	env := map[string]string{"PHX_SERVER": addr, "PHX_TOKEN": testCredential, "PHX_CA_CERT": missing}
	sys.Getenv = func(k string) string { return env[k] }
	if code := Run(context.Background(), sys, []string{"phx", "squeue"}); code != 1 || !strings.Contains(stderr.String(), missing) || !strings.Contains(stderr.String(), "PHX_CA_CERT") {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	if len(f.lists) != 0 {
		t.Fatalf("sent %v without TLS", f.lists)
	}
	env["PHX_INSECURE"] = "1"
	stderr.Reset()
	if code := Run(context.Background(), sys, []string{"phx", "squeue"}); code != 0 || len(f.lists) != 1 {
		t.Fatalf("PHX_INSECURE=1: code %d, stderr %q, calls %d", code, stderr, len(f.lists))
	}
}
