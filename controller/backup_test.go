package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/store"
)

// TestInspectBackupOfAnotherFile: a file that is not a state database is
// refused with bbolt's reason, without the name of the replica's working
// copy or a hint about another controller holding it; a state database is
// taken.
func TestInspectBackupOfAnotherFile(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("x", 5000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := inspectBackup(junk)
	if err == nil || !strings.HasPrefix(err.Error(), "the file is not a Phalanx backup: ") ||
		strings.Contains(err.Error(), ".check") || strings.Contains(err.Error(), "another controller") {
		t.Errorf("inspectBackup of 5000 bytes of junk: %v", err)
	}
	good := filepath.Join(dir, "state.db")
	st, err := store.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := inspectBackup(good); err != nil {
		t.Errorf("inspectBackup of an empty state database: %v", err)
	}
}
