package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/cluster"
)

var squeueOptions = []getopt.Option{
	{Long: "all", Short: 'a', Usage: "jobs of every partition (Phalanx hides none: no effect)"},
	{Long: "array", Short: 'r', Usage: "a row for each pending task of a job array, not one row for all of them"},
	{Long: "Format", Short: 'O', HasArg: true, Usage: "fields by name, NAME[:[.][WIDTH][SUFFIX]],..., e.g. \"JobID:.10 ,UserName:10,ReasonList\""},
	{Long: "long", Short: 'l', Usage: "more columns: long state names and time limits"},
	{Long: "format", Short: 'o', HasArg: true, Usage: "output format, e.g. \"%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R\""},
	{Long: "help", Usage: "show this help"},
	{Long: "jobs", Short: 'j', HasArg: true, Usage: "comma-separated job IDs: JOBID, ARRAYID_TASKID, ARRAYID_[LIST]"},
	{Long: "me", Usage: "only my jobs"},
	{Long: "name", Short: 'n', HasArg: true, Usage: "comma-separated job names"},
	{Long: "noheader", Short: 'h', Usage: "no header line"},
	{Long: "partition", Short: 'p', HasArg: true, Usage: "comma-separated partitions"},
	{Long: "sort", Short: 'S', HasArg: true, Usage: "order by format letters, \"-\" for descending, e.g. \"-t,u\" (default \"P,t,-p\")"},
	{Long: "start", Usage: "pending jobs with their expected start times, soonest first"},
	{Long: "states", Short: 't', HasArg: true, Usage: "comma-separated states (PD,R,... or PENDING,...; all)"},
	{Long: "user", Short: 'u', HasArg: true, Usage: "comma-separated user names"},
	versionOption,
}

func (k *commands) squeue() *ucli.Command {
	return slurmCommand("squeue", "list pending and running jobs", k.runSqueue)
}

// squeueQuery is a parsed squeue command line.
type squeueQuery struct {
	req   *phalanxv1.ListJobsRequest
	refs  []jobRef // -j: the jobs, arrays and tasks to list
	view  SqueueView
	notes []string // what Slurm's squeue says of -S on stderr (see parseSqueueSort)
	me    bool
	help  bool
	start bool
	// states: -t or --start chose the states; without, -j's jobs that
	// have ended are not shown (the controller lists them, to tell an
	// ended job from an unknown one).
	states bool
}

func parseSqueue(args []string) (*squeueQuery, error) {
	vals, operands, err := getopt.Parse(squeueOptions, args, getopt.Permute)
	if err != nil {
		return nil, err
	}
	if len(operands) > 0 {
		return nil, fmt.Errorf("unexpected argument %q: name jobs with -j", operands[0])
	}
	q := &squeueQuery{req: &phalanxv1.ListJobsRequest{}}
	shortFormat := false // -o, which Slurm's -l refuses (-O it takes)
	for _, v := range vals {
		switch v.Name {
		case "array":
			q.view.Array = true
		case "format":
			q.view.Format, shortFormat = v.Value, true
		case "Format":
			if q.view.Format, err = squeueLongFormat(v.Value); err != nil {
				return nil, err
			}
		case "long":
			q.view.Long = true
		case "help":
			q.help = true
		case "jobs":
			if q.refs, err = parseJobRefs(v.Value); err != nil {
				return nil, err
			}
			q.req.JobIds = refIDs(q.refs)
			q.view.TaskNamed = tasksNamed(q.refs)
		case "me":
			q.me = true
		case "name":
			q.req.Names = append(q.req.Names, splitList(v.Value)...)
		case "noheader":
			q.view.NoHeader = true
		case "partition":
			q.req.Partitions = splitList(v.Value)
		case "sort":
			if q.notes, err = checkSqueueSort(v.Value); err != nil {
				return nil, err
			}
			q.view.Sort = orDefault(v.Value, ",") // -S "": no field, not the default
		case "start":
			q.start = true
		case "states":
			if err := q.setStates(v.Value); err != nil {
				return nil, err
			}
		case "user":
			q.req.Users = append(q.req.Users, splitList(v.Value)...)
		}
	}
	if q.view.Long && shortFormat {
		return nil, &rawError{msg: "squeue: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry."}
	}
	if q.start { // as Slurm: pending jobs only, in their own columns
		q.req.States, q.req.IncludeFinished, q.states = []string{string(cluster.JobPending)}, false, true
		q.view.Format = orDefault(q.view.Format, SqueueStartFormat)
		q.view.Sort = orDefault(q.view.Sort, squeueStartSort)
	}
	if q.view.Long { // -l's columns, unless -O or --start gave others; the date line either way
		q.view.Format = orDefault(q.view.Format, SqueueLongFormat)
	}
	return q, nil
}

// slurmJobStates are the job states Slurm 22.05's squeue -t takes, by
// name and code (any case), in the order its error lists them. A job of
// Phalanx is in some of them only; the others select none.
var slurmJobStates = []struct{ name, code string }{
	{"PENDING", "PD"}, {"RUNNING", "R"}, {"SUSPENDED", "S"}, {"COMPLETED", "CD"},
	{"CANCELLED", "CA"}, {"FAILED", "F"}, {"TIMEOUT", "TO"}, {"NODE_FAIL", "NF"},
	{"PREEMPTED", "PR"}, {"BOOT_FAIL", "BF"}, {"DEADLINE", "DL"}, {"OUT_OF_MEMORY", "OOM"},
	{"COMPLETING", "CG"}, {"CONFIGURING", "CF"}, {"RESIZING", "RS"}, {"RESV_DEL_HOLD", "RD"},
	{"REQUEUED", "RQ"}, {"REQUEUE_FED", "RF"}, {"REQUEUE_HOLD", "RH"}, {"REVOKED", "RV"},
	{"SIGNALING", "SI"}, {"SPECIAL_EXIT", "SE"}, {"STAGE_OUT", "SO"}, {"STOPPED", "ST"},
}

// slurmJobState is the name of the state s names in slurmJobStates.
func slurmJobState(s string) (string, bool) {
	for _, st := range slurmJobStates {
		if strings.EqualFold(s, st.name) || strings.EqualFold(s, st.code) {
			return st.name, true
		}
	}
	return "", false
}

// invalidState is squeue's error for -t with a state it does not know, as
// Slurm's prints it: two lines and an empty one.
func invalidState(s string) error {
	names := make([]string, len(slurmJobStates))
	for i, st := range slurmJobStates {
		names[i] = st.name
	}
	return &rawError{msg: "squeue: error: Invalid job state specified: " + s +
		"\nsqueue: error: Valid job states include: " + strings.Join(names, ",") + "\n"}
}

// setStates reads -t as Slurm's squeue does: "all", or state names or
// codes separated by commas, taken as they are (" R" is no state).
func (q *squeueQuery) setStates(list string) error {
	q.req.States = nil
	q.req.IncludeFinished = false
	q.states = true
	if strings.EqualFold(list, "all") {
		q.req.IncludeFinished = true
		return nil
	}
	for _, s := range strings.Split(list, ",") {
		if s == "" {
			continue
		}
		name, ok := slurmJobState(s)
		if !ok {
			return invalidState(s)
		}
		q.req.States = append(q.req.States, name)
		q.req.IncludeFinished = q.req.IncludeFinished || cluster.JobState(name).Terminal()
	}
	return nil
}

func (k *commands) runSqueue(c *ucli.Context, args []string) error {
	if versionAsked(squeueOptions, args, getopt.Permute) {
		return k.printVersion()
	}
	q, err := parseSqueue(args)
	if err != nil {
		return err
	}
	if q.help {
		fmt.Fprintf(k.sys.Stdout, "Usage: squeue [OPTIONS]\n\n%s", getopt.Usage(squeueOptions))
		return nil
	}
	for _, n := range q.notes {
		fmt.Fprintln(k.sys.Stderr, n)
	}
	if q.me {
		u, err := k.sys.CurrentUser()
		if err != nil {
			return fmt.Errorf("--me: cannot determine the current user: %w", err)
		}
		q.req.Users = append(q.req.Users, u.Username)
	}
	_, err = parseFormat(orDefault(q.view.Format, SqueueDefaultFormat), func(c byte) bool { _, ok := squeueHeaders[c]; return ok })
	if we := widthError(""); errors.As(err, &we) {
		return fmt.Errorf("--format: %w", err)
	}
	if err != nil {
		return fmt.Errorf("--format: %w: the fields are %s; -O names them (squeue --help)", err, squeueLetters())
	}
	for i, u := range q.req.Users { // names or UIDs, as squeue(1) takes them
		name, known, _ := userNamed(u, k.sys.LookupUser)
		if !known {
			return &rawError{msg: "squeue: error: Invalid user: " + u}
		}
		q.req.Users[i] = name
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	if len(q.req.Partitions) > 0 {
		var parts *phalanxv1.ListPartitionsResponse
		err := cn.call(c.Context, func(ctx context.Context) (err error) {
			parts, err = cn.api.ListPartitions(ctx, &phalanxv1.ListPartitionsRequest{})
			return err
		})
		if err != nil {
			return err
		}
		if err := knownPartitions(q.req.Partitions, parts.Partitions); err != nil {
			return &rawError{msg: strings.Replace(err.Error(), "sinfo:", "squeue:", 1)}
		}
	}
	jobs, err := cn.listJobs(c.Context, q.req)
	if err != nil {
		return err
	}
	jobs = namedBy(q.refs, jobs)
	if len(q.refs) == 1 && len(jobs) == 0 { // as Slurm's: a list of jobs none of which exists is an empty table
		return &rawError{msg: "slurm_load_jobs error: Invalid job id specified"}
	}
	if !q.states { // as Slurm's: -j shows only jobs in the queue unless -t says
		jobs = slices.DeleteFunc(jobs, func(j *phalanxv1.Job) bool { return !inQueue(j) })
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].Id < jobs[b].Id }) // the order squeue's sort starts from
	if q.start {
		jobs = slices.DeleteFunc(jobs, func(j *phalanxv1.Job) bool { return j.State != string(cluster.JobPending) })
	}
	q.view.Now, q.view.Loc = k.sys.Now(), k.loc()
	out, err := FormatSqueue(jobs, q.view)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(k.sys.Stdout, out)
	return err
}

// inQueue reports whether squeue lists j without -t: it waits, runs, is
// coming back to the queue, or is completing.
func inQueue(j *phalanxv1.Job) bool {
	st := cluster.JobState(j.State)
	return !st.Terminal() || st.ComingBack() || j.GetCompleting()
}

// shownState is the state squeue and scontrol show: COMPLETING while an
// ended job's tasks still stop (Slurm's flag over the base state), else
// the job's.
func shownState(j *phalanxv1.Job) string {
	if j.GetCompleting() {
		return string(cluster.JobCompleting)
	}
	return j.State
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
