package devcluster

import (
	"net"
	"testing"
)

// TestStartComponentWithoutPhxDev: with no phx dev on the directory, or
// only the socket a killed one left, phx dev start says so.
func TestStartComponentWithoutPhxDev(t *testing.T) {
	dir := t.TempDir()
	want := "no phx dev is running on " + dir + " (nothing answers on " + ControlSocket(dir) + ")"
	if _, err := StartComponent(dir, "ctl1"); err == nil || err.Error() != want {
		t.Errorf("no socket: %v, want %q", err, want)
	}
	l, err := net.Listen("unix", ControlSocket(dir))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := StartComponent(dir, "ctl1"); err == nil || err.Error() != want {
		t.Errorf("a stale socket: %v, want %q", err, want)
	}
}
