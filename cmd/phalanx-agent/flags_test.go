package main

import (
	"testing"

	"github.com/phalanx-hpc/phalanx/internal/flagtest"
)

// A bad flag is one line saying what is wrong and where the flags are
// listed; the usage, 70 lines of it, used to come first on stderr and
// push the error out of sight.
func TestBadFlagIsOneLine(t *testing.T) {
	parse := func(args []string) error { _, err := parseFlags(args); return err }
	flagtest.RefusesInOneLine(t, parse, []string{"--bogus"}, "flag provided but not defined: -bogus (phalanx-agent --help lists the flags)")
}

// Negative fake device counts are refused, not taken for the host's own.
func TestNegativeFakeDevices(t *testing.T) {
	for _, arg := range []string{"--fake-nics=-2", "--fake-gpus=-1"} {
		if _, err := parseFlags([]string{arg}); err == nil || err.Error() != "--fake-gpus and --fake-nics take 0 (the host's own) or more" {
			t.Errorf("parseFlags(%s): %v; want it refused", arg, err)
		}
	}
}
