package cli

import (
	"os"
	"path/filepath"
	"strings"
)

// A leader hint: the controller that led at the end of the last run, kept
// in the user's cache directory (~/.cache/phalanx/leader) for the list of
// controllers it was learned from. A new phx process starts there instead
// of at the first controller of the list, which would answer "not the
// leader" (or forward the call) two times in three with three replicas. A
// stale or unreadable hint costs one redirect, as no hint does.

// leaderHintFile is the hint's path, or "" when there is no cache dir.
func (k *commands) leaderHintFile() string {
	if k.sys.CacheDir == nil {
		return ""
	}
	dir, err := k.sys.CacheDir()
	if err != nil || dir == "" {
		return ""
	}
	return filepath.Join(dir, "phalanx", "leader")
}

// leaderHint returns the leader kept for addrs, or "".
func (k *commands) leaderHint(addrs []string) string {
	path := k.leaderHintFile()
	if path == "" {
		return ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	list, leader, ok := strings.Cut(strings.TrimSpace(string(data)), "\n")
	if !ok || list != strings.Join(addrs, ",") {
		return ""
	}
	return leader
}

// keepLeader records leader for addrs when it differs from the hint read
// (best effort: a failure only costs the next run a redirect).
func (k *commands) keepLeader(addrs []string, hint, leader string) {
	path := k.leaderHintFile()
	if path == "" || leader == "" || leader == hint {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".leader-*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(strings.Join(addrs, ",") + "\n" + leader + "\n")
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return
	}
	if os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
	}
}
