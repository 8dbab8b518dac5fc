package runtime

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A watch follows the file as the agent replaces it: a new deadline, a
// file gone, bytes that are no lease, a lease of another boot, and back.
func TestLeaseWatchFollowsTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LeaseFile)
	w := NewLeaseWatch(path)
	now := BootClock()
	ended := func(at BootTime, want bool, whyHas string) {
		t.Helper()
		got, why := w.Ended(at)
		if got != want || !strings.Contains(why, whyHas) {
			t.Fatalf("Ended(%v) = %v, %q; want %v and a reason with %q", time.Duration(at), got, why, want, whyHas)
		}
		// A one-shot read of the same file says the same.
		if once, onceWhy := LeaseEnded(path, at); once != got || onceWhy != why {
			t.Fatalf("LeaseEnded = %v, %q; the watch said %v, %q", once, onceWhy, got, why)
		}
	}

	ended(now, true, "no lease")
	if err := WriteLease(dir, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	ended(now, false, "")
	ended(now.Add(time.Second), true, "the lease ended 0s ago")
	// The same bytes, read again later: the deadline still decides.
	ended(now.Add(500*time.Millisecond), false, "")
	ended(now.Add(2*time.Second), true, "the lease ended 1s ago")

	// A renewal moves the deadline.
	if err := WriteLease(dir, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ended(now.Add(2*time.Second), false, "")

	// Gone, then garbage, then another boot's lease: each ends it.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	ended(now, true, "no lease")
	if err := os.WriteFile(path, []byte("not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ended(now, true, "unreadable lease")
	other := `{"v":1,"boot":"another-boot","until_ns":` + strconv.FormatInt(int64(now.Add(time.Hour)), 10) + "}\n"
	if err := os.WriteFile(path, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	ended(now, true, "of an earlier boot")
	if err := os.WriteFile(path, []byte(strings.Repeat(" ", leaseFileMax+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	ended(now, true, "not a lease")

	// A good lease again is read again.
	if err := WriteLease(dir, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ended(now, false, "")
}
