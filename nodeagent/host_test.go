package nodeagent

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestMemTotalMB(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "meminfo")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := MemTotalMB(write("MemTotal:       2097152 kB\nMemFree:  1 kB\n"))
	if err != nil || got != 2048 {
		t.Errorf("MemTotalMB = %d, %v; want 2048", got, err)
	}
	if _, err := MemTotalMB(write("MemFree: 1 kB\n")); err == nil {
		t.Error("no MemTotal line: want an error")
	}
	if _, err := MemTotalMB(write("MemTotal: lots kB\n")); err == nil {
		t.Error("bad number: want an error")
	}
	if _, err := MemTotalMB(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: want an error")
	}
}

func TestHostAddr(t *testing.T) {
	got := HostAddr("fallback-name")
	if got == "fallback-name" {
		return // no IPv4 interface besides loopback: the fallback is right
	}
	ip := net.ParseIP(got)
	if ip == nil || ip.To4() == nil || ip.IsLoopback() {
		t.Errorf("HostAddr = %q, want a non-loopback IPv4 address", got)
	}
}
