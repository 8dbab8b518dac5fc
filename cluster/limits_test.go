package cluster

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckScript(t *testing.T) {
	ok := "#!/bin/sh\n# héllo wörld\necho ok\n"
	for _, tc := range []struct {
		name, script string
		max          int
		want         string // error substring; empty: accepted
	}{
		{"utf-8", ok, 0, ""},
		{"at the limit", strings.Repeat("x", 100), 100, ""},
		{"over the limit", strings.Repeat("x", 101), 100, "101 bytes, over the limit of 100 bytes (MaxScriptSize)"},
		{"over the default", strings.Repeat("x", DefaultMaxScriptSize+1), 0, "over the limit of 4194304 bytes (4.0 MiB)"},
		{"latin-1 on line 3", "#!/bin/sh\necho a\necho caf\xe9\n", 0, "line 3 is not valid UTF-8"},
		{"cut rune on line 1", "#!/bin/sh \xc3", 0, "line 1 is not valid UTF-8"},
		// Taken, then the job failed: "cannot execute binary file".
		{"NUL on line 2", "#!/bin/sh\n#SBATCH --comment=a\x00b\necho\n", 0, "line 2 holds a NUL byte, which shells refuse"},
	} {
		err := CheckScript(tc.script, tc.max)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v; want accepted", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid)):
			t.Errorf("%s: %v; want ErrInvalid saying %q", tc.name, err, tc.want)
		}
	}
}

func TestCheckEnv(t *testing.T) {
	many := make([]string, MaxEnvVars+1)
	for i := range many {
		many[i] = "V=1"
	}
	big := make([]string, 10)
	for i := range big {
		big[i] = "BIG" + strings.Repeat("x", MaxEnvVarBytes-10)
	}
	for _, tc := range []struct {
		name string
		env  []string
		want string // error substring; empty: accepted
	}{
		{"usual", []string{"HOME=/home/alice", "LANG=fr_FR.UTF-8", "EMPTY=", "GREETING=héllo"}, ""},
		{"no name", []string{"=x"}, `environment entry "=x" has no variable name`},
		{"latin-1 value", []string{"HOME=/home/alice", "NAME=Jos\xe9"}, `environment variable "NAME" is not valid UTF-8`},
		{"latin-1 name", []string{"N\xe4ME=x"}, `environment variable "N\xe4ME" is not valid UTF-8`},
		{"NUL", []string{"A=b\x00c"}, `environment variable "A" holds a NUL byte`},
		{"one too long", []string{"LONG=" + strings.Repeat("x", MaxEnvVarBytes)}, `environment variable "LONG" is 131078 bytes (128.0 KiB), over the limit of 131072 bytes`},
		{"too many", many, "the environment has 10001 variables, over the limit of 10000"},
		{"too big in all", big, "the environment is 1310660 bytes (1.2 MiB), over the limit of 1048576 bytes (1.0 MiB)"},
	} {
		err := CheckEnv(tc.env)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v; want accepted", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid)):
			t.Errorf("%s: %v; want ErrInvalid saying %q", tc.name, err, tc.want)
		}
	}
}
