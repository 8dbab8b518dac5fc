package cluster

import (
	"path/filepath"
	"strings"
	"time"
)

// Prolog is the administrator's programs that an agent runs, as root,
// before a job's task starts on its node (Slurm's Prolog and
// PrologEpilogTimeout keys). They run in order; the first to exit
// non-zero, or to outlive Timeout, stops the task before it runs and
// drains the node, as Slurm drains a node whose prolog fails.
type Prolog struct {
	Programs []string      // absolute paths; none: no prolog
	Timeout  time.Duration // for each program; zero: DefaultPrologTimeout
}

// DefaultPrologTimeout bounds one prolog program when PrologEpilogTimeout
// is not set. Slurm waits for ever by default; a hung prolog would hold
// the job's nodes just as long.
const DefaultPrologTimeout = 5 * time.Minute

// TimeoutOrDefault is the time one program may take.
func (p Prolog) TimeoutOrDefault() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return DefaultPrologTimeout
}

// Validate says what is wrong with p.
func (p Prolog) Validate() error {
	for _, prog := range p.Programs {
		switch {
		case !filepath.IsAbs(prog):
			return Errorf(ErrInvalid, "Prolog=%s: give absolute paths, separated by commas", prog)
		case strings.ContainsAny(prog, "\n\r\x00,"):
			return Errorf(ErrInvalid, "Prolog: one path per program, separated by commas, no NUL")
		case strings.ContainsAny(prog, "*?["):
			// Every node would fail its first job's prolog, and drain.
			return Errorf(ErrInvalid, "Prolog=%s: patterns are not expanded: list the programs, separated by commas", prog)
		}
	}
	if p.Timeout < 0 {
		return Errorf(ErrInvalid, "PrologEpilogTimeout %v: give zero or more seconds", p.Timeout)
	}
	return nil
}
