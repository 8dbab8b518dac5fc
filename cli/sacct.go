package cli

import (
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
)

var sacctOptions = []getopt.Option{
	{Long: "allocations", Short: 'X', Usage: "jobs only, not their steps: phx records no steps, so this is what it lists anyway; -j ID.STEP names the job"},
	{Long: "allusers", Short: 'a', Usage: "every user's jobs"},
	{Long: "brief", Short: 'b', Usage: "only JobID, State and ExitCode"},
	{Long: "delimiter", HasArg: true, Usage: "field separator of -p and -P (default |)"},
	{Long: "duplicates", Short: 'D', Usage: "every attempt of a requeued or restarted job, not only its last"},
	{Long: "endtime", Short: 'E', HasArg: true, Usage: "jobs eligible before this time (default now; with -s, the start time)"},
	{Long: "format", Short: 'o', HasArg: true, Usage: "comma-separated fields, each with an optional %WIDTH (%-WIDTH: left-aligned)"},
	{Long: "help", Short: 'h', Usage: "show this help"},
	{Long: "helpformat", Short: 'e', Usage: "list the fields of --format"},
	{Long: "jobs", Short: 'j', HasArg: true, Usage: "comma-separated job IDs: JOBID, ARRAYID_TASKID, ARRAYID_[LIST], each perhaps .STEP"},
	{Long: "name", HasArg: true, Usage: "comma-separated job names"},
	{Long: "noheader", Short: 'n', Usage: "no header lines"},
	{Long: "parsable", Short: 'p', Usage: "fields separated by |, with a | at the end"},
	{Long: "parsable2", Short: 'P', Usage: "fields separated by |, without one at the end"},
	{Long: "partition", Short: 'r', HasArg: true, Usage: "comma-separated partitions"},
	{Long: "starttime", Short: 'S', HasArg: true, Usage: "jobs not ended before this time (default midnight today; with -s: now; with -j: any time)"},
	{Long: "state", Short: 's', HasArg: true, Usage: "comma-separated states the jobs were in during the window (CD,F,CA,TO,NF,PR,RQ,DL,PD,R or long names)"},
	{Long: "uid", HasArg: true, Usage: "the same as --user"},
	{Long: "user", Short: 'u', HasArg: true, Usage: "comma-separated user names or UIDs (default: yours; root: everyone's)"},
	versionOption,
}

// sacctTimes is the help's note on -S and -E.
const sacctTimes = `
Times (-S, -E): YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY][-HH:MM[:SS]], MMDD[YY][-HH:MM[:SS]],
HH:MM[:SS][AM|PM], today, midnight, noon, now[{+|-}COUNT[seconds|minutes|hours|days|weeks]].
`

func (k *commands) sacct() *ucli.Command {
	return slurmCommand("sacct", "list jobs from the accounting history, finished ones included", k.runSacct)
}

// sacctQuery is a parsed sacct command line: the request, which selects
// jobs by user, partition, name, ID and time window; the jobs, arrays and
// tasks -j names (steps: those named JOBID.STEP); and the view, whose
// Select picks the rows (attempts) by state and window as Slurm picks its
// records.
type sacctQuery struct {
	req                          *phalanxv1.ListJobsRequest
	refs                         []jobRef
	steps                        []bool // refs[i] named a step
	view                         SacctView
	all, brief, help, helpFormat bool
	allocations                  bool
	starttime, endtime           string
}

func parseSacct(args []string, envFormat string) (*sacctQuery, error) {
	vals, operands, err := getopt.Parse(sacctOptions, args, getopt.Permute)
	if err != nil {
		return nil, &rawError{msg: "sacct: " + err.Error()} // glibc's words, as Slurm's sacct prints them
	}
	q := &sacctQuery{req: &phalanxv1.ListJobsRequest{History: true}}
	for _, v := range vals {
		if err := q.set(v); err != nil {
			return nil, err
		}
	}
	if q.brief { // as Slurm, after the fields of -o
		q.view.Format = strings.TrimPrefix(q.view.Format+",JobID,State,ExitCode", ",")
	}
	q.view.Format = orDefault(q.view.Format, envFormat)
	if len(operands) > 0 {
		return nil, &rawError{msg: "sacct: error: Unknown arguments:\nsacct: error:  " + strings.Join(operands, "\nsacct: error:  ")}
	}
	return q, nil
}

func (q *sacctQuery) set(v getopt.Value) (err error) {
	switch v.Name {
	case "allocations":
		q.allocations = true
	case "allusers":
		q.all = true
	case "brief":
		q.brief = true
	case "delimiter":
		q.view.Delimiter = v.Value
	case "duplicates":
		q.view.Duplicates = true
	case "endtime":
		q.endtime = v.Value
	case "format": // each -o adds fields
		q.view.Format = strings.TrimPrefix(q.view.Format+","+v.Value, ",")
	case "help":
		q.help = true
	case "helpformat":
		q.helpFormat = true
	case "jobs":
		err = q.addJobs(v.Value)
	case "name":
		q.req.Names = append(q.req.Names, splitList(v.Value)...)
	case "noheader":
		q.view.NoHeader = true
	case "parsable", "parsable2":
		q.view.Parsable, q.view.Trailing = true, v.Name == "parsable"
	case "partition":
		q.req.Partitions = append(q.req.Partitions, splitList(v.Value)...)
	case "starttime":
		q.starttime = v.Value
	case "state":
		err = q.addStates(v.Value)
	case "uid", "user":
		q.all = v.Value == "-1" // Slurm's spelling of every user
		if !q.all {
			q.req.Users = append(q.req.Users, splitList(v.Value)...)
		}
	}
	return err
}

// addJobs reads -j: JOBID, ARRAYID_TASKID or ARRAYID_[LIST], each perhaps
// with a step (.batch, .extern, .interactive or a number), which names the
// job under -X and nothing else, phx recording no steps. The server is
// asked for the jobs and arrays; the tasks are picked here.
func (q *sacctQuery) addJobs(list string) error {
	for _, s := range splitJobList(list) {
		job, step, hasStep := strings.Cut(s, ".")
		r, err := parseJobRef(job)
		if err != nil || hasStep && !validStep(step) {
			return &rawError{msg: "sacct: fatal: Bad job/step specified: " + s}
		}
		q.refs, q.steps = append(q.refs, r), append(q.steps, hasStep)
	}
	q.req.JobIds = refIDs(q.refs)
	return nil
}

// validStep reports whether s names a step as Slurm's sacct -j takes it.
func validStep(s string) bool {
	if s == "batch" || s == "extern" || s == "interactive" {
		return true
	}
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

// named keeps the jobs -j names: every job without -j; under -X the job
// of a step named too, else nothing for it.
func (q *sacctQuery) named(jobs []*phalanxv1.Job) []*phalanxv1.Job {
	if len(q.refs) == 0 {
		return jobs
	}
	var refs []jobRef
	for i, r := range q.refs {
		if !q.steps[i] || q.allocations {
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 {
		return nil
	}
	return namedBy(refs, jobs)
}

// addStates reads -s as Slurm's sacct does (sacctstates.go). The rows are
// picked by state here (SacctSelect), not by the server, which picks
// whole jobs: a job's earlier attempts have states of their own.
func (q *sacctQuery) addStates(list string) error {
	for _, s := range strings.Split(list, ",") {
		if s == "" {
			continue
		}
		name, err := parseSacctState(s)
		if err != nil {
			return err
		}
		q.view.Select.States = append(q.view.Select.States, name)
	}
	return nil
}

// lookupUserID finds a user by UID; tests replace it.
var lookupUserID = user.LookupId

// checkUsers resolves the users -u names as Slurm's sacct does: a name
// the system does not know is refused; a UID stands for its user's name,
// or for itself when the system does not know it.
func (q *sacctQuery) checkUsers(byName func(string) (*user.User, error)) error {
	for i, name := range q.req.Users {
		u, known, isUID := userNamed(name, byName)
		switch {
		case !known && isUID:
			continue
		case !known:
			return &rawError{msg: "sacct: error: Invalid user id: " + name}
		}
		q.req.Users[i] = u
	}
	return nil
}

// userNamed is the user name or UID name stands for, as Slurm's commands
// take -u: a name the system knows, or a UID's user (isUID: name is a
// number); known is false when the system knows no such user.
func userNamed(name string, byName func(string) (*user.User, error)) (username string, known, isUID bool) {
	u, err := byName(name)
	if _, nerr := strconv.ParseUint(name, 10, 32); err != nil && nerr == nil {
		isUID = true
		u, err = lookupUserID(name)
	}
	if err != nil {
		return name, false, isUID
	}
	return u.Username, true, isUID
}

// resolve fills in what depends on the caller and the clock: the default
// user, and the time window, with Slurm's defaults (sacct(1), DEFAULT
// TIME WINDOW).
func (q *sacctQuery) resolve(now time.Time, loc *time.Location, current func() (*user.User, error)) error {
	if !q.all && len(q.req.Users) == 0 && len(q.req.JobIds) == 0 {
		u, err := current()
		if err != nil {
			return fmt.Errorf("cannot determine the current user (%v): name users with -u, or -a for everyone's jobs", err)
		}
		if u.Uid != "0" { // root sees everyone's jobs, as in Slurm
			q.req.Users = []string{u.Username}
		}
	}
	if q.all {
		q.req.Users = nil
	}
	now = now.Truncate(time.Second) // Slurm's times are whole seconds
	start, end, err := q.window(now, loc)
	if err != nil {
		return err
	}
	if end.Before(start) {
		return &rawError{msg: fmt.Sprintf("sacct: error: Start time (%s) requested is after end time (%s).",
			start.In(loc).Format(timeLayout), end.In(loc).Format(timeLayout))}
	}
	if q.endtime == "" && end.Equal(now) {
		// Up to now, this second included: Slurm's query takes what was
		// eligible before now, and a job submitted this second would be
		// left out (in Slurm it has seldom reached the database yet).
		end = end.Add(time.Second)
	}
	if !start.IsZero() {
		q.req.WindowStart = timestamppb.New(start)
	}
	q.req.WindowEnd = timestamppb.New(end)
	if end.Equal(start) { // one instant: a second long, as in Slurm (SacctSelect)
		q.req.WindowEnd = timestamppb.New(end.Add(time.Second))
	}
	q.view.Select.Start, q.view.Select.End = start, end
	q.view.Select.ByJob = len(q.req.JobIds) > 0
	return nil
}

func (q *sacctQuery) window(now time.Time, loc *time.Location) (start, end time.Time, err error) {
	states, jobs := len(q.view.Select.States) > 0, len(q.req.JobIds) > 0
	switch {
	case q.starttime != "":
		if start, err = parseSlurmTime(q.starttime, now, loc); err != nil {
			return start, end, fmt.Errorf("--starttime=%s: %w", q.starttime, err)
		}
	case states && !jobs:
		start = now
	case !jobs:
		y, m, d := now.In(loc).Date()
		start = time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	switch {
	case q.endtime != "":
		if end, err = parseSlurmTime(q.endtime, now, loc); err != nil {
			return start, end, fmt.Errorf("--endtime=%s: %w", q.endtime, err)
		}
	case states && q.starttime != "":
		end = start
	default:
		end = now
	}
	return start, end, nil
}

func (k *commands) runSacct(c *ucli.Context, args []string) error {
	if versionAsked(sacctOptions, args, getopt.Permute) {
		return k.printVersion()
	}
	q, err := parseSacct(args, k.sys.Getenv("SACCT_FORMAT"))
	switch {
	case err != nil:
		return err
	case q.help:
		fmt.Fprintf(k.sys.Stdout, "Usage: sacct [OPTIONS]\n\n%s%s", getopt.Usage(sacctOptions), sacctTimes)
		return nil
	case q.helpFormat:
		fmt.Fprint(k.sys.Stdout, sacctFieldHelp())
		return nil
	}
	if _, err := sacctColumns(q.view.Format); err != nil {
		return err
	}
	if err := q.checkUsers(k.sys.LookupUser); err != nil {
		return err
	}
	now := k.sys.Now()
	if err := q.resolve(now, k.loc(), k.sys.CurrentUser); err != nil {
		return err
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	jobs, clusterName, err := cn.listClusterJobs(c.Context, q.req)
	if err != nil {
		return err
	}
	q.view.Now, q.view.Loc, q.view.Cluster = now, k.loc(), clusterName
	out, err := FormatSacct(q.named(jobs), q.view)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(k.sys.Stdout, out)
	return err
}
