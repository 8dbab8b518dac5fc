package nodeagent

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
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

// emptyOutputs empties the task's output and error files when its open
// mode truncates (Slurm's default), once for all the job's nodes and its
// attempts: runtime.TruncateOnce marks a file with the job, so nodes that
// open it later, and a requeued attempt, append. Where the file system
// keeps no marks (or has no locks), a file this node alone writes is
// emptied on the job's first attempt, and one the nodes share is appended
// to, with an output-appended event that says why. A file the user cannot
// open is left to checkOutputs, which fails the task with the reason.
func (a *Agent) emptyOutputs(key taskKey, job jobInfo, spec runtime.Spec) {
	if !job.openMode.Truncates() {
		return
	}
	mark := fmt.Sprintf("%d@%d", key.job, job.submitTime)
	for i, path := range []string{spec.Stdout, spec.Stderr} {
		if path == "" || (i == 1 && path == spec.Stdout) {
			continue
		}
		emptied, err := runtime.TruncateOnce(path, spec.UID, spec.GID, mark)
		if errors.Is(err, runtime.ErrNoMark) && !emptied {
			if !a.soleWriter(int(key.rank), job, path) {
				a.reportJobEvent(key.job, cluster.EventOutputAppended, fmt.Sprintf("rank %d: %s is written by several of the job's nodes, on a file system without file locks or user extended attributes, so they cannot agree which one empties it: appended to", key.rank, path))
				continue
			}
			err = nil
			if key.attempt == 0 {
				err = runtime.Truncate(path, spec.UID, spec.GID)
			}
		}
		var pe *fs.PathError
		if err != nil && !(errors.As(err, &pe) && pe.Op == "open") {
			a.reportJobEvent(key.job, cluster.EventOutputAppended, fmt.Sprintf("rank %d: %s not emptied: %v; appended to", key.rank, path, err))
		}
	}
}

// soleWriter reports whether no other node of the job writes path: the job
// has one node, or its -o and -e patterns give another node other files.
func (a *Agent) soleWriter(rank int, job jobInfo, path string) bool {
	if len(job.ranks) < 2 {
		return true
	}
	other := (rank + 1) % len(job.ranks)
	stdout, stderr := outputPaths(job.output, job.errPattern, job.workDir, patternVars{
		array: job.array, jobID: job.id, name: job.name, user: job.user, node: job.ranks[other].node, rank: other,
	})
	return path != stdout && path != stderr
}
