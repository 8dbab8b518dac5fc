package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// The leader a run learned is the next run's first try, for the same list
// of controllers only.
func TestLeaderHint(t *testing.T) {
	dir := t.TempDir()
	k := &commands{sys: &System{CacheDir: func() (string, error) { return dir, nil }}}
	addrs := []string{"ctl1:7817", "ctl2:7817", "ctl3:7817"}
	if h := k.leaderHint(addrs); h != "" {
		t.Fatalf("hint %q before any run", h)
	}
	k.keepLeader(addrs, "", "ctl2:7817")
	if h := k.leaderHint(addrs); h != "ctl2:7817" {
		t.Fatalf("hint %q, want ctl2:7817", h)
	}
	if h := k.leaderHint([]string{"other:7817"}); h != "" {
		t.Fatalf("hint %q for another cluster", h)
	}
	if fi, err := os.Stat(filepath.Join(dir, "phalanx")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("hint dir: %v, %v; want mode 0700", fi, err)
	}
	(&commands{sys: &System{}}).keepLeader(addrs, "", "ctl3:7817") // no cache dir: nothing kept, no panic
}
