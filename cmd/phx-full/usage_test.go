package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cli"
)

// TestBadFlagIsOneLine: a bad flag of phx sim or phx dev, as phx-full's
// main runs them, is one line on stderr that says what to do, not
// "Incorrect Usage" and the command's whole help.
func TestBadFlagIsOneLine(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"sim --bogus", "sim: error: unknown option --bogus: run phx sim --help"},
		{"sim --pass-interval 30", "sim: error: --pass-interval 30: want a duration such as 30s, 5m or 1h30m"},
		{"sim --nodes many", "sim: error: --nodes many: want a whole number"},
		{"sim --seed -1", "sim: error: --seed -1: want a whole number, 0 or more"},
		{"sim --load high", "sim: error: --load high: want a number such as 0.5"},
		{"sim --progress=maybe", "sim: error: --progress=maybe: want true or false"},
		{"sim --repair", "sim: error: --repair needs a value: want a duration such as 30s, 5m or 1h30m"},
		{"sim ettr --bogus", "sim ettr: error: unknown option --bogus: run phx sim ettr --help"},
		{"sim ettr --ckpt-cost 30", "sim ettr: error: --ckpt-cost 30: want a duration such as 30s, 5m or 1h30m"},
		{"dev --bogus", "dev: error: unknown option --bogus: run phx dev --help"},
		{"dev --nodes four", "dev: error: --nodes four: want a whole number"},
		{"dev fault --gpu x", "dev fault: error: --gpu x: want a whole number"},
		{"dev fault xid=13", "dev fault: error: give the node with --node, e.g. --node gpu001"},
		{"dev --nodes -1", "dev: error: --nodes -1: give 1 to 64 (an agent process each; phx sim takes thousands)"},
		{"dev --nodes 0", "dev: error: --nodes 0: give 1 to 64 (an agent process each; phx sim takes thousands)"},
		{"dev --nodes 100000", "dev: error: --nodes 100000: give 1 to 64 (an agent process each; phx sim takes thousands)"},
		{"dev --gpus-per-node -8", "dev: error: --gpus-per-node -8: give 0 (a CPU-only cluster) to 32"},
		{"dev --gpus-per-node 33", "dev: error: --gpus-per-node 33: give 0 (a CPU-only cluster) to 32"},
		{"dev --leaf-size -2", "dev: error: --leaf-size -2: give 1 or more"},
		{"dev --cpus-per-node 0", "dev: error: --cpus-per-node 0: give 1 or more"},
		{"dev --memory-per-node -1", "dev: error: --memory-per-node -1: give 1 or more (MB)"},
		{"sim --workload /nonexistent", "sim: error: --workload /nonexistent: no such file or directory"},
		{"dev start -x", "dev start: error: unknown option -x: run phx dev start --help"},
	} {
		var stdout, stderr bytes.Buffer
		sys := cli.OSSystem()
		sys.Stdout, sys.Stderr = &stdout, &stderr
		args := append([]string{"phx"}, strings.Fields(tc.args)...)
		code := cli.Run(context.Background(), sys, args, devCommand(), simCommand())
		if code != 1 || stdout.Len() != 0 || stderr.String() != tc.want+"\n" {
			t.Errorf("phx %s: code %d, stdout %q\nstderr %q\nwant   %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}
