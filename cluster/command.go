package cluster

import (
	"strings"
	"unicode/utf8"
)

// A job's command, as sbatch ran it: `sbatch [OPTIONS] script [args...]`.
// The script's arguments reach the batch script as $1...; its path and
// the whole command line are shown (squeue's COMMAND, scontrol's Command,
// sacct's SubmitLine), as Slurm shows them.

// Bounds on a job's command.
const (
	// MaxScriptArgs and MaxScriptArgBytes bound the script's arguments, in
	// number and in bytes in all (with their NUL terminators, as execve
	// counts them); one argument is bounded as one environment variable
	// is (MaxEnvVarBytes, the kernel's MAX_ARG_STRLEN).
	MaxScriptArgs     = 10_000
	MaxScriptArgBytes = 256 << 10
	// MaxScriptPath bounds the script's path (PATH_MAX).
	MaxScriptPath = 4096
	// MaxSubmitLine bounds the recorded command line; phx cuts a longer
	// one (SubmitLineOf): it is shown, never run.
	MaxSubmitLine = 64 << 10
	// MaxComment bounds sbatch --comment.
	MaxComment = 64 << 10
	// MaxJobName bounds a job's name, at submit and in scontrol update.
	MaxJobName = 256
)

// CheckJobName refuses a job name no task could be started with, as
// SLURM_JOB_NAME (a NUL byte), one that would break the one-line listings
// of squeue and sacct (a line break), and one past MaxJobName bytes.
func CheckJobName(name string) error {
	switch {
	case strings.IndexByte(name, 0) >= 0:
		return Errorf(ErrInvalid, "job name %q holds a NUL byte, which no process environment can (SLURM_JOB_NAME): give one line of text", name)
	case strings.ContainsAny(name, "\n\r"):
		return Errorf(ErrInvalid, "job name %q holds a line break: give one line of text", name)
	case len(name) > MaxJobName:
		return Errorf(ErrInvalid, "job name of %d bytes: at most %d", len(name), MaxJobName)
	}
	return nil
}

// CommandLine is a job's command as Slurm shows it: the script's path and
// its arguments, "(null)" for a job whose script came from --wrap or
// standard input.
func CommandLine(path string, args []string) string {
	if path == "" {
		return "(null)"
	}
	return strings.Join(append([]string{path}, args...), " ")
}

// CheckCommand refuses script arguments no process could be started with
// (a NUL byte, text that is not UTF-8, past the bounds above) and a path,
// command line or comment past theirs. Messages name the argument by
// position.
func CheckCommand(path string, args []string, line, comment string) error {
	if len(args) > MaxScriptArgs {
		return Errorf(ErrInvalid, "%d script arguments, over the limit of %d: pass them in a file", len(args), MaxScriptArgs)
	}
	total := 0
	for i, a := range args {
		switch {
		case !utf8.ValidString(a):
			return Errorf(ErrInvalid, "script argument %d is not valid UTF-8", i+1)
		case strings.IndexByte(a, 0) >= 0:
			return Errorf(ErrInvalid, "script argument %d holds a NUL byte, which no process argument can", i+1)
		case len(a)+1 > MaxEnvVarBytes:
			return Errorf(ErrInvalid, "script argument %d is %s, over the limit of %s for one argument: pass it in a file",
				i+1, sizeText(len(a)+1), sizeText(MaxEnvVarBytes))
		}
		total += len(a) + 1
	}
	switch {
	case total > MaxScriptArgBytes:
		return Errorf(ErrInvalid, "the script arguments are %s, over the limit of %s: pass them in a file",
			sizeText(total), sizeText(MaxScriptArgBytes))
	case len(path) > MaxScriptPath:
		return Errorf(ErrInvalid, "script path of %d bytes: at most %d", len(path), MaxScriptPath)
	case len(line) > MaxSubmitLine:
		return Errorf(ErrInvalid, "submit line of %d bytes: at most %d", len(line), MaxSubmitLine)
	case len(comment) > MaxComment:
		return Errorf(ErrInvalid, "--comment of %d bytes: at most %d", len(comment), MaxComment)
	}
	return nil
}

// SubmitLineOf is the command line args, joined by spaces as Slurm
// records it, cut to MaxSubmitLine bytes on a character boundary.
func SubmitLineOf(args []string) string {
	line := strings.ToValidUTF8(strings.Join(args, " "), "\uFFFD")
	if len(line) <= MaxSubmitLine {
		return line
	}
	cut := MaxSubmitLine - len("...")
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + "..."
}
