package sbatch

import (
	"errors"
	"fmt"
	"strings"
)

// Slurm's sbatch refuses, in this order, a script of no bytes, one of
// white space only, one without "#!" and one with DOS line breaks (whose
// lines would reach their commands with a \r at the end), with these words.
var (
	ErrEmptyScript      = errors.New("Batch script is empty!")
	ErrWhitespaceScript = errors.New("Batch script contains only whitespace!")
	ErrNotBatchScript   = errors.New("This does not look like a batch script. " +
		"The first line must start with #! followed by the path to an interpreter.")
	ErrDOSLineBreaks = errors.New(`Batch script contains DOS line breaks (\r\n) ` +
		`instead of expected UNIX line breaks (\n): convert it with dos2unix`)
)

// Directive is the options of one #SBATCH line.
type Directive struct {
	Line int // 1-based line number in the script
	Args []string
}

// Directives returns the #SBATCH lines of a script. It fails when the script
// is empty, has no #! line or a directive cannot be split.
func Directives(script string) ([]Directive, error) {
	lines := strings.Split(script, "\n")
	switch {
	case script == "":
		return nil, ErrEmptyScript
	case strings.TrimLeft(script, " \t\n\v\f\r") == "": // C's isspace, as Slurm's
		return nil, ErrWhitespaceScript
	case !strings.HasPrefix(lines[0], "#!"):
		return nil, ErrNotBatchScript
	case strings.Contains(script, "\r\n"):
		return nil, ErrDOSLineBreaks
	}
	var out []Directive
	for i, line := range lines[1:] {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "#") {
			break
		}
		rest, ok := strings.CutPrefix(t, "#SBATCH")
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue // a comment, or #SBATCHX
		}
		args, err := Split(rest)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+2, err)
		}
		if len(args) > 0 {
			out = append(out, Directive{Line: i + 2, Args: args})
		}
	}
	return out, nil
}
