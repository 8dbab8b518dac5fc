package nodeagent

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

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
	stdout, stderr := cluster.OutputPaths(job.output, job.errPattern, job.workDir, cluster.OutputVars{
		Array: job.array, JobID: job.id, Name: job.name, User: job.user, Node: job.ranks[other].node, Rank: other,
	})
	return path != stdout && path != stderr
}
