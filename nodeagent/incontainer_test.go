package nodeagent

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// A container job gets the phx client over its links' target, the node's
// credential socket (read-write: it is connected to) and CA read-only,
// where the job's client looks for them, and the agent's controllers when
// its environment names none. Paths the job names are targets only: what
// is mounted is always the agent's own.
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
	a := &Agent{cfg: Config{ClientBinary: "/opt/phalanx/phx", Controllers: []string{"c1:7817", "c2:7817"}, AuthSocket: sock, CACert: ca}}
	config := func(want []runtime.Mount) []runtime.Mount {
		if _, err := os.Stat(DefaultConfig); err == nil {
			want = append(want, runtime.Mount{Source: DefaultConfig, Target: DefaultConfig, ReadOnly: true})
		}
		return want
	}
	mounts, extra := a.containerClient("/state/jobs/7.0/bin", []string{"PATH=/bin"})
	want := config([]runtime.Mount{{Source: "/opt/phalanx/phx", Target: "/state/jobs/7.0/bin/phx", ReadOnly: true},
		{Source: sock, Target: "/run/phalanx/auth.sock"}, {Source: ca, Target: DefaultCACert, ReadOnly: true}})
	if !reflect.DeepEqual(mounts, want) || !reflect.DeepEqual(extra, []string{"PHX_SERVER=c1:7817,c2:7817"}) {
		t.Errorf("mounts %+v, env %q; want %+v and the agent's controllers", mounts, extra, want)
	}
	env := []string{"PHX_AUTH_SOCKET=/home/u/my.sock", "PHX_CA_CERT=/etc/shadow", "PHX_SERVER=elsewhere:1"}
	mounts, extra = a.containerClient("/b", env)
	want = config([]runtime.Mount{{Source: "/opt/phalanx/phx", Target: "/b/phx", ReadOnly: true},
		{Source: sock, Target: "/home/u/my.sock"}, {Source: ca, Target: "/etc/shadow", ReadOnly: true}})
	if !reflect.DeepEqual(mounts, want) || extra != nil {
		t.Errorf("mounts %+v, env %q; want %+v (the job's paths as targets only) and its own PHX_SERVER kept", mounts, extra, want)
	}
}

// A container job gets phx-full, installed beside phx or in libexec: an
// image has neither phx-full for the phx front end to become, nor the
// node's CLI server.
func TestContainerGetsWholeClient(t *testing.T) {
	root := t.TempDir()
	bin, libexec := filepath.Join(root, "bin"), filepath.Join(root, "libexec", "phalanx")
	os.MkdirAll(bin, 0o755)
	os.MkdirAll(libexec, 0o755)
	front := filepath.Join(bin, "phx")
	os.WriteFile(front, nil, 0o755)
	if got := wholeClient(front); got != front {
		t.Errorf("phx alone: %s, want phx itself", got)
	}
	os.WriteFile(filepath.Join(libexec, "phx-full"), nil, 0o755)
	if got, want := wholeClient(front), filepath.Join(libexec, "phx-full"); got != want {
		t.Errorf("libexec: %s, want %s", got, want)
	}
	os.WriteFile(filepath.Join(bin, "phx-full"), nil, 0o755)
	if got, want := wholeClient(front), filepath.Join(bin, "phx-full"); got != want {
		t.Errorf("beside: %s, want %s", got, want)
	}
	if got := wholeClient("/opt/other/client"); got != "/opt/other/client" {
		t.Errorf("a client not named phx: %s", got)
	}
}
