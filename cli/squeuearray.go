package cli

import (
	"fmt"
	"slices"
	"strings"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// squeueRow is how squeue names one row's job: %i, %K and %A, and for a
// row of folded pending tasks their reasons, as Slurm's squeue prints them.
type squeueRow struct {
	id, task, jobID string
	reason          string // "": the job's own
}

// arrayRows folds the pending tasks of each job array into the row of the
// first, as Slurm's squeue does unless -r (v.Array) asks for a row each, and
// names every row (see squeueRow). Slurm keeps an array's pending tasks in
// one record, the array's, so a folded row's %A is the array's ID, and
// so is a pending task's with -r; a started task has its own.
//
//	42            a job that is not a task
//	40_3          a task that runs, or pending with -r
//	40_[4-15%2]   the folded pending tasks, with the throttle; %K 4-15%2
//	40_[3]        the pending task of a one-task array (--array=3-3)
//	40_3          the one pending task left of a larger array
//
// Pending tasks waiting for different reasons are tasks Slurm has split
// off the array's record and squeue merges back: their row gives the
// reasons joined by commas ("Resources,JobHeldAdmin") and, the record
// rebuilt from its indices, no throttle; nor has a row of tasks that -j
// names one by one (v.TaskNamed), and one such task is shown alone.
func arrayRows(jobs []*phalanxv1.Job, v SqueueView) ([]*phalanxv1.Job, map[*phalanxv1.Job]squeueRow) {
	names := make(map[*phalanxv1.Job]squeueRow, len(jobs))
	pending := map[uint64][]*phalanxv1.Job{} // by array: its pending tasks
	var rows []*phalanxv1.Job
	for _, j := range jobs {
		a := j.ArrayTask
		switch {
		case a == nil:
			id := fmt.Sprint(j.Id)
			names[j] = squeueRow{id: id, task: "N/A", jobID: id}
		case j.State == string(cluster.JobPending) && !v.Array:
			pending[a.ArrayJobId] = append(pending[a.ArrayJobId], j)
			if len(pending[a.ArrayJobId]) > 1 {
				continue // folded into the first's row
			}
		default:
			jobID := j.Id
			if j.State == string(cluster.JobPending) {
				jobID = a.ArrayJobId
			}
			names[j] = squeueRow{id: fmt.Sprintf("%d_%d", a.ArrayJobId, a.TaskId), task: fmt.Sprint(a.TaskId), jobID: fmt.Sprint(jobID)}
		}
		rows = append(rows, j)
	}
	for base, tasks := range pending {
		names[tasks[0]] = foldedRow(base, tasks, v.TaskNamed[base])
	}
	return rows, names
}

// foldedRow names the row of an array's pending tasks (see arrayRows).
func foldedRow(base uint64, tasks []*phalanxv1.Job, taskNamed bool) squeueRow {
	var idx []int
	var reasons []string
	for _, j := range tasks {
		idx = append(idx, int(j.ArrayTask.TaskId))
		if r := reason(j); !slices.Contains(reasons, r) {
			reasons = append(reasons, r)
		}
	}
	first := tasks[0].ArrayTask
	row := squeueRow{jobID: fmt.Sprint(base), reason: strings.Join(reasons, ",")}
	if len(tasks) == 1 && (taskNamed || first.Count > 1) {
		row.id, row.task = fmt.Sprintf("%d_%d", base, first.TaskId), fmt.Sprint(first.TaskId)
		return row
	}
	throttle := int(first.Throttle)
	if taskNamed || len(reasons) > 1 {
		throttle = 0
	}
	row.task = strings.Trim(cluster.FormatTaskIDs(idx, throttle), "[]")
	row.id = fmt.Sprintf("%d_[%s]", base, row.task)
	return row
}

// tasksNamed is the arrays refs (squeue -j) name by their tasks alone, not
// as a whole.
func tasksNamed(refs []jobRef) map[uint64]bool {
	named := map[uint64]bool{}
	for _, r := range refs {
		if r.tasks != nil && r.step == nil {
			named[r.id] = true
		}
	}
	for _, r := range refs {
		if r.tasks == nil {
			delete(named, r.id)
		}
	}
	return named
}
