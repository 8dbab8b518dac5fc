package nodeagent

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// A container job gets the phx client over its links' target, the job's
// credential socket (read-write: it is connected to) and CA read-only, and
// the agent's controllers when its environment names none.
func TestContainerClient(t *testing.T) {
	dir := t.TempDir()
	sock, ca := filepath.Join(dir, "auth.sock"), filepath.Join(dir, "ca.crt")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.WriteFile(ca, []byte("cert"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{ClientBinary: "/opt/phalanx/phx", Controllers: []string{"c1:7817", "c2:7817"}}}
	env := []string{"PATH=/bin", "PHX_AUTH_SOCKET=" + sock, "PHX_CA_CERT=" + ca, "PHX_CA_CERT=" + filepath.Join(dir, "missing")}
	mounts, extra := a.containerClient("/state/jobs/7.0/bin", env)
	want := []runtime.Mount{{Source: "/opt/phalanx/phx", Target: "/state/jobs/7.0/bin/phx", ReadOnly: true}, {Source: sock, Target: sock}}
	if _, err := os.Stat(DefaultConfig); err == nil {
		want = append(want, runtime.Mount{Source: DefaultConfig, Target: DefaultConfig, ReadOnly: true})
	}
	if !reflect.DeepEqual(mounts, want) || !reflect.DeepEqual(extra, []string{"PHX_SERVER=c1:7817,c2:7817"}) {
		t.Errorf("mounts %+v, env %q; want %+v (the last PHX_CA_CERT, missing, not mounted) and the agent's controllers", mounts, extra, want)
	}
	env = []string{"PHX_AUTH_SOCKET=" + sock, "PHX_CA_CERT=" + ca, "PHX_SERVER=elsewhere:1"}
	mounts, extra = a.containerClient("/b", env)
	if len(mounts) < 3 || mounts[2] != (runtime.Mount{Source: ca, Target: ca, ReadOnly: true}) || extra != nil {
		t.Errorf("mounts %+v, env %q; want the CA read-only and the job's own PHX_SERVER kept", mounts, extra)
	}
}
