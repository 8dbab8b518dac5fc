package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// SqueueDefaultFormat is squeue's default output format.
const SqueueDefaultFormat = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"

// SqueueLongFormat is the format of squeue -l, as Slurm's.
const SqueueLongFormat = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"

// squeueNames are squeue -O's field names (Slurm's), by -o letter.
var squeueNames = []struct {
	name   string
	letter byte
}{
	{"Account", 'a'}, {"ArrayJobID", 'F'}, {"ArrayTaskID", 'K'}, {"Dependency", 'E'}, {"Feature", 'f'}, {"JobArrayID", 'i'}, {"JobID", 'A'}, {"Name", 'j'},
	{"Nice", 'y'}, {"NodeList", 'N'}, {"NumNodes", 'D'}, {"Partition", 'P'}, {"Priority", 'Q'}, {"QOS", 'q'}, {"Reason", 'r'}, {"ReasonList", 'R'},
	{"SchedNodes", 'Y'}, {"StartTime", 'S'}, {"State", 'T'}, {"StateCompact", 't'}, {"SubmitTime", 'V'},
	{"TimeLeft", 'L'}, {"TimeLimit", 'l'}, {"TimeUsed", 'M'}, {"tres-per-node", 'b'}, {"UserName", 'u'},
	{"WorkDir", 'Z'},
}

// squeueLongFormat turns -O's comma-separated NAME[:[.][WIDTH][SUFFIX]]
// (names in any case) into the -o format that prints the same: without a
// colon a field is 20 wide, with one and no width as wide as its value;
// "." aligns right; the suffix follows the field (Slurm puts nothing
// between -O fields).
func squeueLongFormat(spec string) (string, error) {
	var b strings.Builder
	for _, tok := range strings.Split(spec, ",") {
		name, rest, hasSpec := strings.Cut(tok, ":")
		if name = strings.TrimSpace(name); name == "" && !hasSpec {
			continue
		}
		i := slices.IndexFunc(squeueNames, func(n struct {
			name   string
			letter byte
		}) bool {
			return strings.EqualFold(n.name, name)
		})
		if i < 0 {
			names := make([]string, len(squeueNames))
			for j, n := range squeueNames {
				names[j] = n.name
			}
			return "", fmt.Errorf("--Format: invalid field %q: the fields are %s", name, strings.Join(names, ", "))
		}
		width, right := "20", ""
		if hasSpec {
			var dot bool
			rest, dot = strings.CutPrefix(rest, ".")
			digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
			if dot && digits == 0 {
				return "", fmt.Errorf("--Format: %q: a right-aligned field needs a width (NAME:.WIDTH)", tok)
			}
			if dot {
				right = "."
			}
			if _, err := fieldWidth(rest[:digits]); err != nil {
				return "", fmt.Errorf("--Format: %q: %w", tok, err)
			}
			width, rest = rest[:digits], rest[digits:]
		}
		b.WriteString("%" + right + width + string([]byte{squeueNames[i].letter}))
		b.WriteString(strings.ReplaceAll(rest, "%", "%%"))
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("--Format: no fields: write NAME[:[.][WIDTH][SUFFIX]],...")
	}
	return b.String(), nil
}

// SqueueStartFormat is the format of squeue --start, as Slurm's.
const SqueueStartFormat = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"

// squeueHeaders are the column titles of squeue's format fields.
var squeueHeaders = map[byte]string{
	'a': "ACCOUNT", 'A': "JOBID", 'b': "TRES_PER_NODE", 'F': "ARRAY_JOB_ID", 'K': "ARRAY_TASK_ID", 'D': "NODES", 'E': "DEPENDENCY", 'f': "FEATURES", 'i': "JOBID", 'j': "NAME",
	'q': "QOS", 'y': "NICE",
	'l': "TIME_LIMIT", 'L': "TIME_LEFT", 'M': "TIME", 'N': "NODELIST", 'P': "PARTITION",
	'Q': "PRIORITY", 'r': "REASON", 'R': "NODELIST(REASON)", 'S': "START_TIME",
	't': "ST", 'T': "STATE", 'u': "USER", 'V': "SUBMIT_TIME", 'Y': "SCHEDNODES", 'Z': "WORK_DIR",
}

// squeueLetters lists the -o letters, a, A, b, ... in order, as errors
// name them.
func squeueLetters() string {
	var out []string
	for c := byte('a'); c <= 'z'; c++ {
		for _, l := range []byte{c, c - 'a' + 'A'} {
			if _, ok := squeueHeaders[l]; ok {
				out = append(out, "%"+string(l))
			}
		}
	}
	return strings.Join(out, " ")
}

// SqueueView says how squeue prints: the -o format, the -S order, whether
// to print the header (and, with -l, the date line before it, as Slurm's
// squeue does whatever the format), the time elapsed times are measured to
// and the zone for dates.
type SqueueView struct {
	Format    string // empty: SqueueDefaultFormat
	Sort      string // -S, Slurm's fields (see squeuesort.go); empty: "P,t,-p"
	NoHeader  bool
	Long      bool // -l
	Now       time.Time
	Loc       *time.Location
	Array     bool            // -r: a row for each pending task of an array
	TaskNamed map[uint64]bool // arrays -j names by their tasks alone (see arrayRecords)
}

// FormatSqueue prints jobs as squeue does.
func FormatSqueue(jobs []*phalanxv1.Job, v SqueueView) (string, error) {
	format := v.Format
	if format == "" {
		format = SqueueDefaultFormat
	}
	fields, err := parseFormat(format, func(c byte) bool { _, ok := squeueHeaders[c]; return ok })
	if err != nil {
		return "", err
	}
	keys, _, err := parseSqueueSort(orDefault(v.Sort, squeueDefaultSort))
	if err != nil {
		return "", err
	}
	if v.Loc == nil {
		v.Loc = time.UTC
	}
	var b strings.Builder
	if !v.NoHeader {
		if v.Long {
			b.WriteString(v.Now.In(v.Loc).Format(ctimeLayout) + "\n")
		}
		// As Slurm's squeue, the headers of these wide fields are not cut.
		render(&b, fields, func(c byte) string { return squeueHeaders[c] }, func(c byte) bool { return strings.IndexByte("RNY", c) >= 0 })
	}
	recs, names := arrayRecords(jobs, v)
	sortRecords(recs, keys, v.Now)
	for _, j := range rowsOf(recs) {
		row := names[j]
		render(&b, fields, func(c byte) string {
			switch {
			case c == 'i':
				return row.id
			case c == 'K':
				return row.task
			case c == 'A':
				return row.jobID
			case c == 'r' && row.reason != "":
				return row.reason
			case c == 'R' && row.reason != "":
				return "(" + row.reason + ")"
			}
			return jobField(j, c, v)
		}, func(c byte) bool { return strings.IndexByte("MlL", c) >= 0 }) // times are never cut, as Slurm's
	}
	return b.String(), nil
}

func jobField(j *phalanxv1.Job, c byte, v SqueueView) string {
	s := j.GetSpec()
	switch c {
	case 'a':
		return orDefault(s.GetAccount(), "(null)")
	case 'b':
		return tresPerNode(s)
	case 'D':
		return fmt.Sprint(jobNodeCount(j))
	case 'E':
		return dependency(j)
	case 'f':
		return orDefault(s.GetConstraint(), "(null)")
	case 'q':
		return orDefault(s.GetQos(), "normal")
	case 'y':
		return fmt.Sprint(s.GetNice())
	case 'i', 'A':
		return fmt.Sprint(j.Id) // arrays: see arrayRecords
	case 'F':
		if j.ArrayTask != nil {
			return fmt.Sprint(j.ArrayTask.ArrayJobId)
		}
		return fmt.Sprint(j.Id)
	case 'j':
		return s.GetName()
	case 'l':
		return cluster.FormatLimit(jobLimit(j))
	case 'L':
		return timeLeft(j, v.Now)
	case 'M':
		return cluster.FormatDuration(elapsed(j, v.Now))
	case 'N':
		return jobNodeList(j)
	case 'P':
		return s.GetPartition()
	case 'Q':
		return fmt.Sprint(j.GetPriority())
	case 'r':
		return reason(j)
	case 'R':
		switch nl := jobNodeList(j); {
		case reasonShown(shownState(j)):
		case nl != "" || j.State != string(cluster.JobPending) && j.State != "":
			return nl // an ended job that never ran: none, as Slurm's
		}
		return "(" + reason(j) + ")"
	case 'S': // as scontrol's StartTime (startTime), N/A for none
		return fmtTime(shownStart(j), v.Loc, "N/A")
	case 't':
		return cluster.JobState(shownState(j)).Short()
	case 'T':
		return shownState(j)
	case 'u':
		return s.GetUser()
	case 'V':
		return fmtTime(j.SubmitTime, v.Loc, "N/A")
	case 'Y':
		return schedNodes(j)
	case 'Z':
		return s.GetWorkDir()
	}
	out, _ := moreJobField(j, c, v)
	return out
}

// schedNodes is SCHEDNODES: the nodes reserved for a pending job, as a
// hostlist, or (null).
func schedNodes(j *phalanxv1.Job) string {
	if j.State != string(cluster.JobPending) || len(j.SchedNodes) == 0 {
		return "(null)"
	}
	return hostlist.Compress(j.SchedNodes)
}

// shownStart is the start %S shows: a pending job's expected start, the
// end of one that ended before it started.
func shownStart(j *phalanxv1.Job) *timestamppb.Timestamp {
	switch {
	case j.State == string(cluster.JobPending):
		return j.ExpectedStart
	case j.StartTime == nil:
		return j.EndTime
	}
	return j.StartTime
}

func reason(j *phalanxv1.Job) string {
	if j.Reason == "" {
		return string(cluster.ReasonNone)
	}
	return j.Reason
}

// elapsed is the run time: zero before start, up to the end once ended.
func elapsed(j *phalanxv1.Job, now time.Time) time.Duration {
	if j.StartTime == nil || j.State == string(cluster.JobPending) {
		return 0
	}
	end := now
	if j.EndTime != nil {
		end = j.EndTime.AsTime()
	}
	return end.Sub(j.StartTime.AsTime())
}

func jobLimit(j *phalanxv1.Job) time.Duration {
	secs := j.TimeLimitSeconds
	if secs == 0 {
		secs = j.GetSpec().GetTimeLimitSeconds()
	}
	return time.Duration(secs) * time.Second
}

func timeLeft(j *phalanxv1.Job, now time.Time) string {
	limit := jobLimit(j)
	if limit == 0 {
		return "UNLIMITED"
	}
	return cluster.FormatDuration(limit - elapsed(j, now))
}

func jobNodeCount(j *phalanxv1.Job) int {
	if len(j.Alloc) > 0 {
		return len(j.Alloc)
	}
	return int(max(j.GetSpec().GetNodes(), 1))
}

func jobNodeList(j *phalanxv1.Job) string {
	names := make([]string, len(j.Alloc))
	for i, a := range j.Alloc {
		names[i] = a.Node
	}
	return hostlist.Compress(names)
}

// tresPerNode is Slurm's "gres/gpu:TYPE:N" request string, or "N/A".
func tresPerNode(s *phalanxv1.JobSpec) string {
	switch {
	case s.GetGpusPerNode() == 0:
		return "N/A"
	case s.GetGpuType() != "":
		return fmt.Sprintf("gres/gpu:%s:%d", s.GpuType, s.GpusPerNode)
	}
	return fmt.Sprintf("gres/gpu:%d", s.GpusPerNode)
}

// reasonShown reports whether squeue's NODELIST(REASON) shows a job in
// state st by its reason rather than its nodes, as Slurm's does: pending,
// and ended by a time limit, a deadline or a failure.
func reasonShown(st string) bool {
	switch cluster.JobState(st) {
	case cluster.JobPending, cluster.JobTimeout, cluster.JobDeadline, cluster.JobFailed:
		return true
	}
	return false
}
