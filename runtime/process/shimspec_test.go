package process

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A supervisor given a spec of a later version than it knows (phalanx-shim
// older than the agent that starts it) refuses it rather than run the task
// without what it does not know, and says what to do.
func TestShimRefusesLaterSpec(t *testing.T) {
	exe, err := os.Executable() // this test binary: TestMain runs the supervisor
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	marker := filepath.Join(dir, "ran")
	body, _ := json.Marshal(shimSpec{V: shimSpecVersion + 1, ID: "phx-1-0-0", Argv: []string{"/bin/touch", marker}, RecordDir: filepath.Join(dir, "rec")})
	os.MkdirAll(filepath.Join(dir, "rec"), 0o700)
	_, err = New(filepath.Join(dir, "rec")).startShim(context.Background(), "phx-1-0-0", exe, body, out, out)
	if err == nil || !strings.Contains(err.Error(), "same release") {
		t.Errorf("a spec of version %d: %v, want a refusal that names the fix", shimSpecVersion+1, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the task ran")
	}
}
