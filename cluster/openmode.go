package cluster

import "strings"

// OpenMode is how a job's output and error files are opened when it first
// starts (sbatch --open-mode). The default is Slurm's (JobFileAppend=0):
// truncate. Phalanx runs the batch script on every node and each node
// writes into the job's files, so "truncate" means emptied once, before the
// job's first line, by whichever node opens a file first; the others, and
// every later attempt of a requeued job, append (see nodeagent).
type OpenMode uint8

// Open modes.
const (
	OpenDefault  OpenMode = iota // not given: truncate, as Slurm's default
	OpenAppend                   // --open-mode=append
	OpenTruncate                 // --open-mode=truncate
)

// ParseOpenMode reads --open-mode: append or truncate, in any case, or
// their first letters, as Slurm reads them.
func ParseOpenMode(s string) (OpenMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "append", "a":
		return OpenAppend, nil
	case "truncate", "t":
		return OpenTruncate, nil
	}
	return OpenDefault, Errorf(ErrInvalid, "--open-mode=%s: invalid open mode: use append or truncate", s)
}

// Truncates reports whether the job's files are emptied when it first
// starts.
func (m OpenMode) Truncates() bool { return m != OpenAppend }

func (m OpenMode) String() string {
	switch m {
	case OpenAppend:
		return "append"
	case OpenTruncate:
		return "truncate"
	}
	return ""
}
