package nodeagent

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// DefaultOutput is the output pattern of a job that sets none, as sbatch's.
const DefaultOutput = "slurm-%j.out"

// DefaultArrayOutput is a job array task's output without -o, Slurm's.
const DefaultArrayOutput = "slurm-%A_%a.out"

// patternVars are the values sbatch filename patterns refer to.
type patternVars struct {
	jobID uint64
	array *cluster.ArrayTask // %A, %a; nil: not an array task
	name  string             // %x
	user  string             // %u
	node  string             // %N: the node's short hostname
	rank  int                // %n and %t: the node's rank (its batch script is its first task)
}

// outputPaths resolves a task's stdout and stderr files from the job's -o
// and -e patterns: DefaultOutput when -o is empty, stderr into the output
// file when -e is empty, relative paths under workDir.
func outputPaths(output, errPattern, workDir string, v patternVars) (stdout, stderr string) {
	if output == "" {
		output = DefaultOutput
		if v.array != nil {
			output = DefaultArrayOutput
		}
	}
	stdout = resolvePath(expandPattern(output, v), workDir)
	if errPattern == "" {
		return stdout, stdout
	}
	return stdout, resolvePath(expandPattern(errPattern, v), workDir)
}

func resolvePath(p, workDir string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(workDir, p)
}

// expandPattern replaces sbatch's filename patterns: %j job ID, %x job
// name, %u user, %N short hostname, %n node ID and %t task ID (both the
// rank), %A the array's ID (the job's own outside an array), %a the array
// index (4294967294 outside an array, as Slurm writes it), %% a percent
// sign. A width between % and the letter zero-pads numbers (%4j → 0042) and
// is ignored for names, as Slurm does. Anything else is kept as written.
func expandPattern(p string, v patternVars) string {
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
func (v patternVars) expand(letter byte, width int) (string, bool) {
	num := func(n uint64) string { return fmt.Sprintf("%0*d", width, n) }
	switch letter {
	case 'j':
		return num(v.jobID), true
	case 'A':
		if v.array != nil {
			return num(uint64(v.array.JobID)), true
		}
		return num(v.jobID), true
	case 'a':
		if v.array != nil {
			return num(uint64(v.array.TaskID)), true
		}
		return num(4294967294), true
	case 'n', 't':
		return num(uint64(v.rank)), true
	case 'x':
		return v.name, true
	case 'u':
		return v.user, true
	case 'N':
		short, _, _ := strings.Cut(v.node, ".")
		return short, true
	case '%':
		return "%", true
	}
	return "", false
}
