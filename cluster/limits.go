package cluster

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on what one job submission may carry. phx checks them before it
// sends a job and the controller again when it admits one (the controller
// decides: phx may be older, or bypassed); both give the same messages,
// which come from the functions below.
const (
	// DefaultMaxScriptSize bounds a batch script, in bytes: Slurm's
	// SchedulerParameters=max_script_size and its default of 4 MiB. An admin
	// changes it with MaxScriptSize= in phalanx.conf, up to
	// MaxScriptSizeCeiling.
	DefaultMaxScriptSize = 4 << 20
	// MaxScriptSizeCeiling is the most MaxScriptSize may be set to: a script
	// travels whole in one gRPC message (to the controller, through Raft,
	// and to every agent that runs it) and must stay well inside the
	// message limits of clients and agents (apiclient.MaxRecvMsgSize).
	MaxScriptSizeCeiling = 64 << 20

	// MaxEnvBytes bounds a job's whole environment (NAME=VALUE strings and
	// their NUL terminators, as execve counts them). Slurm has no limit of
	// its own: the kernel refuses to start a program whose arguments and
	// environment pass ARG_MAX (2 MiB with the usual 8 MiB stack), and the
	// task's own variables (SLURM_*, MASTER_ADDR, ...) come on top.
	MaxEnvBytes = 1 << 20
	// MaxEnvVarBytes bounds one NAME=VALUE: the kernel's MAX_ARG_STRLEN
	// (32 pages), which Slurm also uses for one variable (MAX_ENV_STRLEN).
	MaxEnvVarBytes = 128 << 10
	// MaxEnvVars bounds how many variables a job may have, far above any
	// real environment (a login shell has about a hundred).
	MaxEnvVars = 10_000
)

// CheckScript refuses a batch script longer than max bytes (0: the
// default), one that is not valid UTF-8 (the API carries text) or one
// that holds a NUL byte, naming the first bad line. Messages leave it to the caller to say which script
// ("job.sh: line 3 is not valid UTF-8: ...").
func CheckScript(script string, max int) error {
	if max <= 0 {
		max = DefaultMaxScriptSize
	}
	if len(script) > max {
		return Errorf(ErrInvalid, "%s, over the limit of %s (MaxScriptSize): shorten it, "+
			"for instance by reading data or long commands from a file", sizeText(len(script)), sizeText(max))
	}
	if utf8.ValidString(script) && strings.IndexByte(script, 0) < 0 {
		return nil
	}
	for i, line := range strings.Split(script, "\n") {
		if !utf8.ValidString(line) {
			return Errorf(ErrInvalid, "line %d is not valid UTF-8: save the script as UTF-8 "+
				"(e.g. iconv -f latin1 -t utf-8)", i+1)
		}
		if strings.IndexByte(line, 0) >= 0 {
			return Errorf(ErrInvalid, "line %d holds a NUL byte, which shells refuse (bash: cannot execute binary file): "+
				"remove it (e.g. tr -d '\\000')", i+1)
		}
	}
	return nil // not reached: some line is invalid
}

// CheckEnv refuses an environment (NAME=VALUE strings) that no task could
// be started with or that passes the limits above: an entry without a
// name, a NUL byte, text that is not UTF-8, too long a variable, too many
// variables or too many bytes in all. Messages name the variable.
func CheckEnv(env []string) error {
	if len(env) > MaxEnvVars {
		return Errorf(ErrInvalid, "the environment has %d variables, over the limit of %d: "+
			"pass only what the job needs with --export=NONE,VAR1,VAR2=value", len(env), MaxEnvVars)
	}
	total := 0
	for _, kv := range env {
		if err := checkEnvVar(kv); err != nil {
			return err
		}
		total += len(kv) + 1
	}
	if total > MaxEnvBytes {
		return Errorf(ErrInvalid, "the environment is %s, over the limit of %s: "+
			"pass only what the job needs with --export=NONE,VAR1,VAR2=value", sizeText(total), sizeText(MaxEnvBytes))
	}
	return nil
}

func checkEnvVar(kv string) error {
	name, _, _ := strings.Cut(kv, "=")
	switch {
	case name == "":
		return Errorf(ErrInvalid, "environment entry %q has no variable name: write NAME=VALUE", shorten(kv))
	case !utf8.ValidString(kv):
		return Errorf(ErrInvalid, "environment variable %q is not valid UTF-8: unset it, "+
			"or leave it out with --export=NONE,VAR1,VAR2", shorten(name))
	case strings.IndexByte(kv, 0) >= 0:
		return Errorf(ErrInvalid, "environment variable %q holds a NUL byte, which no process environment can: unset it", shorten(name))
	case len(kv)+1 > MaxEnvVarBytes:
		return Errorf(ErrInvalid, "environment variable %q is %s, over the limit of %s for one variable: "+
			"unset it, or pass its value in a file", shorten(name), sizeText(len(kv)+1), sizeText(MaxEnvVarBytes))
	}
	return nil
}

// shorten cuts a name or entry quoted in a message to 64 bytes.
func shorten(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// sizeText prints a byte count exactly, and in KiB or MiB as people read
// it: "512 bytes", "4194305 bytes (4.0 MiB)".
func sizeText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d bytes (%.1f KiB)", n, float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
