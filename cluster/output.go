package cluster

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Output files. A job's -o and -e are sbatch's filename patterns; the
// agents expand them to open each node's files, and the CLI the same way
// to show them (scontrol show job's StdOut=, squeue's STDOUT), so the two
// never disagree.

// DefaultOutput is the output pattern of a job that sets none, as sbatch's.
const DefaultOutput = "slurm-%j.out"

// DefaultArrayOutput is a job array task's output without -o, Slurm's.
const DefaultArrayOutput = "slurm-%A_%a.out"

// noArrayIndex is what %a is outside an array: Slurm's NO_VAL.
const noArrayIndex = 4294967294

// OutputVars are the values the patterns refer to.
type OutputVars struct {
	JobID uint64
	Array *ArrayTask // %A, %a, %b; nil: not an array task
	Name  string     // %x
	User  string     // %u
	// Node is %N, the node's host name, cut at its first dot; "": not known
	// (a job not placed), and %N is left as written.
	Node string
	Rank int // %n and %t: the node's rank (its batch script is its first task)
}

// OutputPaths resolves a task's stdout and stderr files from the job's -o
// and -e patterns: DefaultOutput (DefaultArrayOutput for an array task)
// when -o is empty, stderr into the output file when -e is empty, relative
// paths under workDir.
func OutputPaths(output, errPattern, workDir string, v OutputVars) (stdout, stderr string) {
	if output == "" {
		output = DefaultOutput
		if v.Array != nil {
			output = DefaultArrayOutput
		}
	}
	stdout = underDir(ExpandOutput(output, v), workDir)
	if errPattern == "" {
		return stdout, stdout
	}
	return stdout, underDir(ExpandOutput(errPattern, v), workDir)
}

func underDir(p, dir string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// ExpandOutput replaces sbatch's filename patterns: %j the job ID, %x its
// name, %u its user, %N the short host name, %n and %t the rank, %A the
// array's ID (the job's own outside an array), %a the array index
// (4294967294 outside an array, as Slurm writes it), %b that index modulo
// 10, %s the step ("batch": the batch script's), %J the job and step
// (42.batch), %% a percent sign. A width between % and the letter
// zero-pads numbers (%4j: 0042) and is ignored for names, as Slurm does.
// Anything else is kept as written.
func ExpandOutput(p string, v OutputVars) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' {
			b.WriteByte(p[i])
			continue
		}
		j := i + 1
		for j < len(p) && p[j] >= '0' && p[j] <= '9' {
			j++
		}
		if j == len(p) {
			b.WriteString(p[i:])
			break
		}
		width, _ := strconv.Atoi(p[i+1 : j]) // digits only, or empty: 0
		if s, ok := v.expand(p[j], width); ok {
			b.WriteString(s)
		} else {
			b.WriteString(p[i : j+1])
		}
		i = j
	}
	return b.String()
}

// expand returns the value of one pattern letter.
func (v OutputVars) expand(letter byte, width int) (string, bool) {
	num := func(n uint64) string { return fmt.Sprintf("%0*d", width, n) }
	index := uint64(noArrayIndex)
	if v.Array != nil {
		index = uint64(v.Array.TaskID)
	}
	switch letter {
	case 'j':
		return num(v.JobID), true
	case 'J':
		return num(v.JobID) + ".batch", true
	case 's':
		return "batch", true
	case 'A':
		if v.Array != nil {
			return num(uint64(v.Array.JobID)), true
		}
		return num(v.JobID), true
	case 'a':
		return num(index), true
	case 'b':
		return num(index % 10), true
	case 'n', 't':
		return num(uint64(v.Rank)), true
	case 'x':
		return v.Name, true
	case 'u':
		return v.User, true
	case 'N':
		short, _, _ := strings.Cut(v.Node, ".")
		return short, short != ""
	case '%':
		return "%", true
	}
	return "", false
}
