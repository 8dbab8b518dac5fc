package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// SacctDefaultFormat is sacct's default --format.
const SacctDefaultFormat = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"

// SacctView says how sacct prints: the --format fields (empty:
// SacctDefaultFormat), the header, parsable output (fields separated by
// Delimiter, default |, and ended by one when Trailing), the time running
// jobs' elapsed times run to, the zone of dates, and which rows (zero:
// every one).
type SacctView struct {
	Format             string
	NoHeader           bool
	Parsable, Trailing bool
	Delimiter          string
	Now                time.Time
	Loc                *time.Location
	Cluster            string // the cluster's name (Cluster)
	Select             SacctSelect
	// folded names the row that stands for an array's pending tasks
	// (foldPending): its JobID.
	folded map[*phalanxv1.Job]string
}

// sacctField is a --format field: Slurm's name and default width
// (negative: left-aligned), how a wider value is cut ('+': to the width,
// its last character a +; '.': to the width; 0: never) and its value.
type sacctField struct {
	name  string
	width int
	cut   byte
	value func(j *phalanxv1.Job, v *SacctView) string
}

// sacctFields are the fields phx has, in Slurm's (alphabetical) order.
var sacctFields = []sacctField{
	{"Account", 10, '+', func(j *phalanxv1.Job, _ *SacctView) string { return j.GetSpec().GetAccount() }},
	{"AllocCPUS", 10, 0, func(j *phalanxv1.Job, _ *SacctView) string { return fmt.Sprint(allocCPUs(j)) }},
	{"AllocNodes", 10, '+', func(j *phalanxv1.Job, _ *SacctView) string { return fmt.Sprint(len(j.Alloc)) }},
	{"AllocTRES", 10, '+', func(j *phalanxv1.Job, _ *SacctView) string { return sacctTRES(j) }},
	{"Constraints", 19, '+', func(j *phalanxv1.Job, _ *SacctView) string { return j.GetSpec().GetConstraint() }},
	{"CPUTime", 10, 0, func(j *phalanxv1.Job, v *SacctView) string {
		return runTime(elapsed(j, v.Now) * time.Duration(allocCPUs(j)))
	}},
	{"CPUTimeRAW", 10, 0, func(j *phalanxv1.Job, v *SacctView) string {
		return fmt.Sprint(int64(elapsed(j, v.Now).Seconds()) * allocCPUs(j))
	}},
	{"Elapsed", 10, 0, func(j *phalanxv1.Job, v *SacctView) string { return runTime(elapsed(j, v.Now)) }},
	{"ElapsedRaw", 10, 0, func(j *phalanxv1.Job, v *SacctView) string { return fmt.Sprint(int64(elapsed(j, v.Now).Seconds())) }},
	{"Eligible", 19, '.', func(j *phalanxv1.Job, v *SacctView) string { return fmtTime(j.SubmitTime, v.Loc, "Unknown") }},
	{"End", 19, '.', func(j *phalanxv1.Job, v *SacctView) string { return fmtTime(j.EndTime, v.Loc, "Unknown") }},
	{"ExitCode", 8, '+', func(j *phalanxv1.Job, _ *SacctView) string { return exitCode(j.ExitCode, j.ExitSignal) }},
	{"GID", 6, 0, func(j *phalanxv1.Job, _ *SacctView) string { return fmt.Sprint(j.GetSpec().GetGid()) }},
	{"GPUHours", 10, 0, func(j *phalanxv1.Job, v *SacctView) string {
		return fmt.Sprintf("%.2f", elapsed(j, v.Now).Hours()*float64(allocGPUs(j)))
	}},
	{"JobID", -12, '+', func(j *phalanxv1.Job, v *SacctView) string {
		if id, ok := v.folded[j]; ok {
			return id
		}
		if a := j.ArrayTask; a != nil {
			return fmt.Sprintf("%d_%d", a.ArrayJobId, a.TaskId)
		}
		return fmt.Sprint(j.Id)
	}},
	{"JobIDRaw", -12, '+', func(j *phalanxv1.Job, _ *SacctView) string { return fmt.Sprint(j.Id) }},
	{"JobName", 10, '+', func(j *phalanxv1.Job, _ *SacctView) string { return j.GetSpec().GetName() }},
	{"NCPUS", 10, 0, func(j *phalanxv1.Job, _ *SacctView) string { return fmt.Sprint(allocCPUs(j)) }},
	{"NNodes", 8, 0, func(j *phalanxv1.Job, _ *SacctView) string { return fmt.Sprint(jobNodeCount(j)) }},
	{"NodeList", 15, '+', func(j *phalanxv1.Job, _ *SacctView) string { return orDefault(jobNodeList(j), "None assigned") }},
	{"Partition", 10, '+', func(j *phalanxv1.Job, _ *SacctView) string { return j.GetSpec().GetPartition() }},
	{"Priority", 10, 0, func(j *phalanxv1.Job, _ *SacctView) string { return fmt.Sprint(j.GetPriority()) }},
	{"QOS", 10, '+', func(j *phalanxv1.Job, _ *SacctView) string { return orDefault(j.GetSpec().GetQos(), "normal") }},
	{"Reason", 22, '+', func(j *phalanxv1.Job, _ *SacctView) string { return reason(j) }},
	{"ReqCPUS", 8, 0, func(j *phalanxv1.Job, _ *SacctView) string {
		return fmt.Sprint(max(j.GetSpec().GetNodes(), 1) * j.GetSpec().GetCpusPerNode())
	}},
	{"ReqNodes", 8, '+', func(j *phalanxv1.Job, _ *SacctView) string { return fmt.Sprint(max(j.GetSpec().GetNodes(), 1)) }},
	{"Restarts", 8, 0, func(j *phalanxv1.Job, _ *SacctView) string { return fmt.Sprint(j.Attempt) }},
	{"Start", 19, '.', func(j *phalanxv1.Job, v *SacctView) string { return fmtTime(j.StartTime, v.Loc, "Unknown") }},
	{"State", 10, '+', func(j *phalanxv1.Job, _ *SacctView) string { return j.State }},
	{"Submit", 19, '.', func(j *phalanxv1.Job, v *SacctView) string { return fmtTime(j.SubmitTime, v.Loc, "Unknown") }},
	{"Timelimit", 10, '+', func(j *phalanxv1.Job, _ *SacctView) string {
		if l := jobLimit(j); l > 0 {
			return runTime(l)
		}
		return "UNLIMITED"
	}},
	{"TimelimitRaw", 10, '+', func(j *phalanxv1.Job, _ *SacctView) string {
		if l := jobLimit(j); l > 0 {
			return fmt.Sprint(int64(l.Minutes()))
		}
		return "UNLIMITED"
	}},
	{"UID", 6, 0, func(j *phalanxv1.Job, _ *SacctView) string { return fmt.Sprint(j.GetSpec().GetUid()) }},
	{"User", 9, '+', func(j *phalanxv1.Job, _ *SacctView) string { return j.GetSpec().GetUser() }},
	{"WorkDir", 20, '+', func(j *phalanxv1.Job, _ *SacctView) string { return j.GetSpec().GetWorkDir() }},
}

// FormatSacct prints jobs as sacct does: fixed-width columns, each
// followed by a space, under a header and a line of dashes; or parsable.
func FormatSacct(jobs []*phalanxv1.Job, v SacctView) (string, error) {
	cols, err := sacctColumns(v.Format)
	if err != nil {
		return "", err
	}
	if v.Loc == nil {
		v.Loc = time.UTC
	}
	var b strings.Builder
	if !v.NoHeader {
		v.line(&b, cols, func(c sacctColumn) (string, byte) { return c.f.name, '.' })
		if !v.Parsable {
			for _, c := range cols {
				b.WriteString(strings.Repeat("-", abs(c.width)) + " ")
			}
			b.WriteByte('\n')
		}
	}
	var rows []sacctRow
	for _, r := range attemptRows(jobs) {
		if v.Select.keeps(r) {
			rows = append(rows, r)
		}
	}
	rows, v.folded = foldPending(rows)
	for _, r := range rows {
		v.line(&b, cols, func(c sacctColumn) (string, byte) { return c.f.value(r.Job, &v), c.f.cut })
	}
	return b.String(), nil
}

// foldPending folds the pending tasks of each array into one row, as
// Slurm's sacct shows them: the first's, whose JobID (folded) is
// ARRAYID_[LIST%THROTTLE], as squeue's.
func foldPending(rows []sacctRow) ([]sacctRow, map[*phalanxv1.Job]string) {
	first := map[uint64]*phalanxv1.Job{}
	tasks := map[uint64][]int{}
	out := rows[:0:0]
	for _, r := range rows {
		a := r.Job.ArrayTask
		if a == nil || r.Job.State != string(cluster.JobPending) {
			out = append(out, r)
			continue
		}
		tasks[a.ArrayJobId] = append(tasks[a.ArrayJobId], int(a.TaskId))
		if first[a.ArrayJobId] == nil {
			first[a.ArrayJobId] = r.Job
			out = append(out, r)
		}
	}
	folded := map[*phalanxv1.Job]string{}
	for base, j := range first {
		folded[j] = fmt.Sprintf("%d_%s", base, cluster.FormatTaskIDs(tasks[base], int(j.ArrayTask.Throttle)))
	}
	return out, folded
}

// exitCode prints an exit status as Slurm does, code:signal, where a
// process killed by a signal exited with no code of its own: 0:9, where a
// shell reports 137.
func exitCode(code, signal int32) string {
	if signal != 0 {
		code = 0
	}
	return fmt.Sprintf("%d:%d", code, signal)
}

// sacctRow is one row of sacct: a job as it stands, or one of its earlier
// attempts as it ended, with when it became eligible: the job's submit
// time for its first attempt, the end of the attempt before for a later
// one (Slurm's record of a requeued job starts then).
type sacctRow struct {
	*phalanxv1.Job
	eligible time.Time
}

// attemptRows gives a job that was restarted or requeued one row per
// attempt, oldest first: each earlier attempt as it ended (its state,
// reason, times and nodes), then the job as it stands.
func attemptRows(jobs []*phalanxv1.Job) []sacctRow {
	var out []sacctRow
	for _, j := range jobs {
		eligible, _ := tsTime(j.SubmitTime)
		for _, a := range j.Attempts {
			if a.Attempt >= j.Attempt || a.State == "" {
				continue // the current attempt is the job's own row
			}
			row := proto.Clone(j).(*phalanxv1.Job)
			row.Attempt, row.State, row.Reason = a.Attempt, a.State, a.Reason
			row.StartTime, row.EndTime, row.Alloc = a.StartTime, a.EndTime, a.Alloc
			row.ExitCode, row.ExitSignal = a.ExitCode, a.ExitSignal
			out = append(out, sacctRow{row, eligible})
			if end, ok := tsTime(a.EndTime); ok {
				eligible = end
			}
		}
		out = append(out, sacctRow{j, eligible})
	}
	return out
}

// SacctSelect picks sacct's rows as Slurm picks its records, each row (an
// attempt of a job) by its own state and times. With a window (End set;
// Start zero: from the beginning), a row is kept when, with no States, it
// was in the queue or ran in the window (eligible by its end, not ended
// before its start); with States, when it was in one of them during the
// window: PENDING, waiting at some point in it; RUNNING, holding its
// resources at some point in it; an end state, reached in it; CONFIGURING
// or COMPLETING, its state now.
type SacctSelect struct {
	States     []string
	Start, End time.Time
}

// keeps reports whether the row is selected.
func (s SacctSelect) keeps(r sacctRow) bool {
	switch {
	case s.End.IsZero(): // no window
		return len(s.States) == 0 || slices.Contains(s.States, r.State)
	case len(s.States) == 0:
		end, _ := tsTime(r.EndTime)
		return s.meets(r.eligible, end)
	}
	return slices.ContainsFunc(s.States, func(st string) bool { return s.was(r, st) })
}

// was reports whether row r was in state st during the window.
func (s SacctSelect) was(r sacctRow, st string) bool {
	start, started := tsTime(r.StartTime)
	end, ended := tsTime(r.EndTime)
	switch st {
	case string(cluster.JobPending): // from eligible to its start, or its end
		if started {
			return s.meets(r.eligible, start)
		}
		return s.meets(r.eligible, end)
	case string(cluster.JobRunning):
		return started && s.meets(start, end)
	case string(cluster.JobConfiguring), string(cluster.JobCompleting):
		return r.State == st && s.meets(r.eligible, end)
	}
	return r.State == st && ended && !end.Before(s.Start) && !end.After(s.End)
}

// meets reports whether from..to (to zero: not ended) meets the window.
func (s SacctSelect) meets(from, to time.Time) bool {
	return !from.After(s.End) && (to.IsZero() || !to.Before(s.Start))
}

// tsTime is a wire time, and whether it is set.
func tsTime(ts *timestamppb.Timestamp) (time.Time, bool) {
	if ts == nil || ts.AsTime().IsZero() {
		return time.Time{}, false
	}
	return ts.AsTime(), true
}

// allocGPUs is how many GPUs the job (or attempt) holds.
func allocGPUs(j *phalanxv1.Job) int64 {
	var n int64
	for _, a := range j.Alloc {
		n += int64(len(a.Gpus))
	}
	return n
}

// line writes one line; cell gives a column's text and how to cut it.
func (v *SacctView) line(b *strings.Builder, cols []sacctColumn, cell func(sacctColumn) (string, byte)) {
	for i, c := range cols {
		s, cut := cell(c)
		switch {
		case !v.Parsable:
			b.WriteString(sacctCell(s, c.width, cut) + " ")
		case i < len(cols)-1 || v.Trailing:
			b.WriteString(s + orDefault(v.Delimiter, "|"))
		default:
			b.WriteString(s)
		}
	}
	b.WriteByte('\n')
}

// sacctCell pads s to |width| (right-aligned when width is positive) and
// cuts it as the field says when it is wider.
func sacctCell(s string, width int, cut byte) string {
	w := abs(width)
	if r := []rune(s); len(r) > w {
		switch cut {
		case 0:
			return s
		case '+':
			if w > 0 {
				r[w-1] = '+'
			}
		}
		return string(r[:w])
	}
	return pad(s, w, width > 0)
}

func abs(n int) int { return max(n, -n) }

// allocCPUs is the CPUs the job holds (0 while pending).
func allocCPUs(j *phalanxv1.Job) int64 {
	var n int64
	for _, a := range j.Alloc {
		n += int64(a.Cpus)
	}
	return n
}

// sacctTRES is AllocTRES: what the job holds, by resource name, memory in
// the largest unit that divides it; empty while pending.
func sacctTRES(j *phalanxv1.Job) string {
	if len(j.Alloc) == 0 {
		return ""
	}
	var gpus, mem int64
	for _, a := range j.Alloc {
		gpus, mem = gpus+int64(len(a.Gpus)), mem+a.MemoryMb
	}
	var parts []string
	if cpus := allocCPUs(j); cpus > 0 {
		parts = append(parts, fmt.Sprintf("cpu=%d", cpus))
	}
	if gpus > 0 {
		parts = append(parts, fmt.Sprintf("gres/gpu=%d", gpus))
	}
	if mem > 0 {
		parts = append(parts, "mem="+reqMem(mem))
	}
	return strings.Join(append(parts, fmt.Sprintf("node=%d", len(j.Alloc))), ",")
}
