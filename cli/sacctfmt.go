package cli

import (
	"fmt"
	"strings"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// SacctDefaultFormat is sacct's default --format.
const SacctDefaultFormat = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"

// SacctView says how sacct prints: the --format fields (empty:
// SacctDefaultFormat), the header, parsable output (fields separated by
// Delimiter, default |, and ended by one when Trailing), the time running
// jobs' elapsed times run to, the zone of dates, which rows (zero: every
// one) and whether every selected attempt of a job is a row (Duplicates,
// -D) or only its newest.
type SacctView struct {
	Format             string
	NoHeader           bool
	Parsable, Trailing bool
	Delimiter          string
	Now                time.Time
	Loc                *time.Location
	Cluster            string // the cluster's name (Cluster)
	Select             SacctSelect
	Duplicates         bool
}

// sacctField is a --format field: Slurm's name and default width
// (negative: left-aligned), how a wider value is cut ('+': to the width,
// its last character a +; '.': to the width; 0: never) and its value.
type sacctField struct {
	name  string
	width int
	cut   byte
	value func(r *sacctRow, v *SacctView) string
}

// sacctFields are the fields phx has, in Slurm's (alphabetical) order.
var sacctFields = []sacctField{
	{"Account", 10, '+', func(r *sacctRow, _ *SacctView) string { return r.GetSpec().GetAccount() }},
	{"AllocCPUS", 10, 0, func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(rowCPUs(r)) }},
	{"AllocNodes", 10, '+', func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(len(r.Alloc)) }},
	{"AllocTRES", 10, '+', func(r *sacctRow, _ *SacctView) string { return sacctTRES(r.Job) }},
	{"Constraints", 19, '+', func(r *sacctRow, _ *SacctView) string { return r.GetSpec().GetConstraint() }},
	{"CPUTime", 10, 0, func(r *sacctRow, v *SacctView) string {
		return runTime(elapsed(r.Job, v.Now) * time.Duration(rowCPUs(r)))
	}},
	{"CPUTimeRAW", 10, 0, func(r *sacctRow, v *SacctView) string {
		return fmt.Sprint(int64(elapsed(r.Job, v.Now).Seconds()) * rowCPUs(r))
	}},
	{"Elapsed", 10, 0, func(r *sacctRow, v *SacctView) string { return runTime(elapsed(r.Job, v.Now)) }},
	{"ElapsedRaw", 10, 0, func(r *sacctRow, v *SacctView) string { return fmt.Sprint(int64(elapsed(r.Job, v.Now).Seconds())) }},
	{"Eligible", 19, '.', func(r *sacctRow, v *SacctView) string { return rowTime(r.eligible, v.Loc) }},
	{"End", 19, '.', func(r *sacctRow, v *SacctView) string { return fmtTime(r.EndTime, v.Loc, "Unknown") }},
	{"ExitCode", 8, '+', func(r *sacctRow, _ *SacctView) string { return rowExitCode(r) }},
	{"GID", 6, 0, func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(r.GetSpec().GetGid()) }},
	{"GPUHours", 10, 0, func(r *sacctRow, v *SacctView) string {
		return fmt.Sprintf("%.2f", elapsed(r.Job, v.Now).Hours()*float64(allocGPUs(r.Job)))
	}},
	{"JobID", -12, '+', func(r *sacctRow, _ *SacctView) string { return orDefault(r.folded, jobName(r.Job)) }},
	{"JobIDRaw", -12, '+', func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(r.Id) }},
	{"JobName", 10, '+', func(r *sacctRow, _ *SacctView) string { return r.GetSpec().GetName() }},
	{"NCPUS", 10, 0, func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(rowCPUs(r)) }},
	{"NNodes", 8, 0, func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(jobNodeCount(r.Job)) }},
	{"NodeList", 15, '+', func(r *sacctRow, _ *SacctView) string { return orDefault(jobNodeList(r.Job), "None assigned") }},
	{"Partition", 10, '+', func(r *sacctRow, _ *SacctView) string { return r.GetSpec().GetPartition() }},
	{"Priority", 10, 0, func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(r.GetPriority()) }},
	{"QOS", 10, '+', func(r *sacctRow, _ *SacctView) string { return orDefault(r.GetSpec().GetQos(), "normal") }},
	{"Reason", 22, '+', func(r *sacctRow, _ *SacctView) string { return rowReason(r) }},
	{"ReqCPUS", 8, 0, func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(reqCPUs(r.Job)) }},
	{"ReqNodes", 8, '+', func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(max(r.GetSpec().GetNodes(), 1)) }},
	{"Restarts", 8, 0, func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(r.Attempt) }},
	{"Start", 19, '.', func(r *sacctRow, v *SacctView) string { return rowStart(r, v.Loc) }},
	{"State", 10, '+', func(r *sacctRow, _ *SacctView) string { return accountedState(r.State) }},
	{"Submit", 19, '.', func(r *sacctRow, v *SacctView) string { return rowTime(r.submit, v.Loc) }},
	{"Timelimit", 10, '+', func(r *sacctRow, _ *SacctView) string { return rowLimit(r, runTime) }},
	{"TimelimitRaw", 10, '+', func(r *sacctRow, _ *SacctView) string {
		return rowLimit(r, func(l time.Duration) string { return fmt.Sprint(int64(l.Minutes())) })
	}},
	{"UID", 6, 0, func(r *sacctRow, _ *SacctView) string { return fmt.Sprint(r.GetSpec().GetUid()) }},
	{"User", 9, '+', func(r *sacctRow, _ *SacctView) string { return r.GetSpec().GetUser() }},
	{"WorkDir", 20, '+', func(r *sacctRow, _ *SacctView) string { return r.GetSpec().GetWorkDir() }},
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
	v.Now = v.Now.Truncate(time.Second) // as the records' times
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
	var rows []*sacctRow
	for _, r := range attemptRows(jobs) {
		if v.Select.keeps(r) {
			rows = append(rows, r)
		}
	}
	if !v.Duplicates {
		rows = newestRows(rows)
	}
	rows = foldPending(rows)
	sortRows(rows)
	for _, r := range rows {
		v.line(&b, cols, func(c sacctColumn) (string, byte) { return c.f.value(r, &v), c.f.cut })
	}
	return b.String(), nil
}

// rowTime prints a record's time, Unknown when it has none.
func rowTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "Unknown"
	}
	return t.In(loc).Format(timeLayout)
}

// rowStart is Start: None for a row that ended without starting.
func rowStart(r *sacctRow, loc *time.Location) string {
	if r.StartTime == nil && r.EndTime != nil {
		return "None"
	}
	return fmtTime(r.StartTime, loc, "Unknown")
}

// rowReason is Reason as Slurm's records keep it: a pending row's reason;
// None once started or ended, Phalanx keeping no earlier reason (Slurm's
// is the last it waited for).
func rowReason(r *sacctRow) string {
	if r.State == string(cluster.JobPending) && r.EndTime == nil {
		return reason(r.Job)
	}
	return string(cluster.ReasonNone)
}

// rowExitCode is ExitCode: the attempt's CODE:SIGNAL. A job cancelled
// while it ran shows the signal that ended it (0:15), which Slurm 22.05
// shows on its .batch step's line, its job line saying 0:0: Phalanx has
// no step lines, and a cancelled job is not 0:0 (issue 11).
func rowExitCode(r *sacctRow) string {
	return exitCode(r.ExitCode, r.ExitSignal)
}

// rowLimit prints a row's time limit: UNLIMITED, or Partition_Limit for
// a row that never started without a limit of its own (Slurm records the
// partition's when the job starts).
func rowLimit(r *sacctRow, format func(time.Duration) string) string {
	switch l := jobLimit(r.Job); {
	case r.StartTime == nil && r.GetSpec().GetTimeLimitSeconds() == 0:
		return "Partition_Limit"
	case l > 0:
		return format(l)
	}
	return "UNLIMITED"
}

// rowCPUs is AllocCPUS: what the row holds, else (pending, or ended
// without starting) what it asks for, as Slurm's records say.
func rowCPUs(r *sacctRow) int64 {
	if len(r.Alloc) == 0 {
		return reqCPUs(r.Job)
	}
	return allocCPUs(r.Job)
}

// reqCPUs is ReqCPUS: the CPUs the job asks for in all (one a node at
// least), as ReqTRES's cpu=.
func reqCPUs(j *phalanxv1.Job) int64 {
	return int64(jobNodeCount(j)) * int64(max(j.GetSpec().GetCpusPerNode(), 1))
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
