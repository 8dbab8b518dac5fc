package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/checkpoint"
)

// phx ckpt commit marks a step the task wrote complete, without the
// controller; what is wrong is said in one line, with exit code 1.
func TestCkptCommit(t *testing.T) {
	local := t.TempDir()
	if err := os.Mkdir(filepath.Join(local, "12"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		env    string // PHX_CKPT_DIR
		code   int
		stderr string
	}{
		{[]string{"commit", "12"}, local, 0, ""},
		{[]string{"commit", "13"}, local, 1, "write step 13's files there first"},
		{[]string{"commit", "012"}, local, 1, "without leading zeros"},
		{[]string{"commit", "-1"}, local, 1, "give a whole number"},
		{[]string{"commit", "12"}, "", 1, "PHX_CKPT_DIR is not set"},
		{[]string{"push", "12"}, local, 1, "give: phx ckpt commit STEP"},
	} {
		sys, _, stderr := testSystem(t, "127.0.0.1:1")
		getenv := sys.Getenv
		sys.Getenv = func(k string) string {
			if k == "PHX_CKPT_DIR" {
				return tc.env
			}
			return getenv(k)
		}
		code := Run(context.Background(), sys, append([]string{"/x/phx", "ckpt"}, tc.args...))
		if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("phx ckpt %v: code %d, stderr %q; want %d, %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
	if steps, err := checkpoint.Committed(local); err != nil || len(steps) != 1 || steps[0] != 12 {
		t.Errorf("committed steps: %v, %v; want [12]", steps, err)
	}
}
