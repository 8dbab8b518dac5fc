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

// arrayRecords makes squeue's records of jobs (see squeueRec) and names
// their rows (see squeueRow): it folds the pending tasks of each job array
// into the row of the first, as Slurm's squeue does unless -r (v.Array)
// asks for a row each; either way they are one record, as Slurm keeps an
// array's pending tasks in one, the array's. So a folded row's %A is the
// array's ID, and so is a pending task's with -r; a started task has its
// own.
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
// Records come in the order of jobs, an array's pending tasks at the first.
func arrayRecords(jobs []*phalanxv1.Job, v SqueueView) ([]*squeueRec, map[*phalanxv1.Job]squeueRow) {
	names := make(map[*phalanxv1.Job]squeueRow, len(jobs))
	pending := map[uint64][]*phalanxv1.Job{} // by array: its pending tasks
	folded := map[uint64]*squeueRec{}        // by array: its pending tasks' record
	var recs []*squeueRec
	for _, j := range jobs {
		a := j.ArrayTask
		switch {
		case a == nil:
			id := fmt.Sprint(j.Id)
			names[j] = squeueRow{id: id, task: "N/A", jobID: id}
			recs = append(recs, &squeueRec{rows: []*phalanxv1.Job{j}, base: j.Id, task: noTask})
		case j.State == string(cluster.JobPending):
			pending[a.ArrayJobId] = append(pending[a.ArrayJobId], j)
			if v.Array {
				names[j] = squeueRow{id: fmt.Sprintf("%d_%d", a.ArrayJobId, a.TaskId), task: fmt.Sprint(a.TaskId), jobID: fmt.Sprint(a.ArrayJobId)}
			}
			if r := folded[a.ArrayJobId]; r != nil {
				if v.Array {
					r.rows = append(r.rows, j)
				}
				continue
			}
			folded[a.ArrayJobId] = &squeueRec{rows: []*phalanxv1.Job{j}, base: a.ArrayJobId}
			recs = append(recs, folded[a.ArrayJobId])
		default:
			names[j] = squeueRow{id: fmt.Sprintf("%d_%d", a.ArrayJobId, a.TaskId), task: fmt.Sprint(a.TaskId), jobID: fmt.Sprint(j.Id)}
			recs = append(recs, &squeueRec{rows: []*phalanxv1.Job{j}, base: a.ArrayJobId, task: int64(a.TaskId)})
		}
	}
	for base, tasks := range pending {
		r := folded[base]
		r.task = noTask
		if len(tasks) == 1 {
			r.task = int64(tasks[0].ArrayTask.TaskId)
		}
		if !v.Array {
			names[tasks[0]] = foldedRow(base, tasks, v.TaskNamed[base])
		}
	}
	return recs, names
}

// rowsOf is the rows of recs, in their order.
func rowsOf(recs []*squeueRec) []*phalanxv1.Job {
	var rows []*phalanxv1.Job
	for _, r := range recs {
		rows = append(rows, r.rows...)
	}
	return rows
}

// foldedRow names the row of an array's pending tasks (see arrayRecords).
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
