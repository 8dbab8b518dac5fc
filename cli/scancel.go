package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/cli/sbatch"
	"github.com/phalanx-hpc/phalanx/cluster"
)

var scancelOptions = []getopt.Option{
	{Long: "help", Usage: "show this help"},
	{Long: "me", Usage: "cancel my jobs"},
	{Long: "name", Short: 'n', HasArg: true, Usage: "cancel jobs with this name"},
	{Long: "partition", Short: 'p', HasArg: true, Usage: "cancel only jobs in these partitions (comma-separated)"},
	{Long: "state", Short: 't', HasArg: true, Usage: "cancel only jobs in these states: PENDING, RUNNING, ... or PD, R, ... (comma-separated)"},
	{Long: "user", Short: 'u', HasArg: true, Usage: "cancel this user's jobs"},
	{Long: "signal", Short: 's', HasArg: true, Usage: "send this signal (USR1, 10, ...) to the running jobs instead of cancelling them"},
	{Long: "batch", Short: 'b', Usage: "with --signal: to the batch script alone"},
	{Long: "full", Short: 'f', Usage: "with --signal: to every process, the batch script included"},
	{Long: "verbose", Short: 'v', Usage: "say which jobs are cancelled, and which are unknown or ended"},
	versionOption,
}

// cancelFilter is what scancel's options say of the jobs to cancel.
type cancelFilter struct {
	user, name         string
	states, partitions []string
	signal             int32 // scancel --signal: signal instead of cancel
	scope              phalanxv1.SignalScope
	verbose            bool
}

// quiet reports whether an unknown or ended job named in r goes unsaid, as
// Slurm's scancel leaves it (exit 0) when it cancels whole jobs without
// -v; a signal, or a step, to one is an error.
func (f cancelFilter) quiet(r jobRef) bool {
	return f.signal == 0 && r.step == nil
}

// verboseLine is what Slurm's scancel -v says as it acts on r: "Terminating
// job 42" for a cancel, "Signal 10 to job 42" for --signal, "step" for a
// step's.
func (f cancelFilter) verboseLine(r jobRef) string {
	what := "job"
	if r.step != nil {
		what = "step"
	}
	if f.signal != 0 {
		return fmt.Sprintf("scancel: Signal %d to %s %s", f.signal, what, r)
	}
	return fmt.Sprintf("scancel: Terminating %s %s", what, r)
}

func (f cancelFilter) request(ids ...uint64) *phalanxv1.CancelJobRequest {
	return &phalanxv1.CancelJobRequest{JobIds: ids, User: f.user, Name: f.name, States: f.states,
		Partitions: f.partitions, RequestId: newRequestID(), Signal: f.signal, SignalScope: f.scope}
}

func (k *commands) scancel() *ucli.Command {
	return slurmCommand("scancel", "cancel jobs", k.runScancel)
}

func (k *commands) runScancel(c *ucli.Context, args []string) error {
	if versionAsked(scancelOptions, args, getopt.Permute) {
		return k.printVersion()
	}
	vals, operands, err := getopt.Parse(scancelOptions, args, getopt.Permute)
	if err != nil {
		return err
	}
	var f cancelFilter
	for _, v := range vals {
		switch v.Name {
		case "help":
			fmt.Fprintf(k.sys.Stdout, "Usage: scancel [OPTIONS] [JOBID[.STEP]...]\n\n%s", getopt.Usage(scancelOptions))
			return nil
		case "me":
			u, err := k.sys.CurrentUser()
			if err != nil {
				return fmt.Errorf("--me: cannot determine the current user: %w", err)
			}
			f.user = u.Username
		case "name":
			f.name = v.Value
		case "partition":
			f.partitions = splitList(v.Value)
		case "state":
			for _, s := range splitList(v.Value) {
				st, err := cluster.ParseJobState(s)
				if err != nil { // Slurm's words first
					return &rawError{msg: "scancel: error: Invalid job state specified: " + s + " (use PENDING, RUNNING, ... or PD, R, ...)"}
				}
				f.states = append(f.states, string(st))
			}
		case "user": // a name or UID the system knows, as Slurm's scancel checks it
			name, known, _ := userNamed(v.Value, k.sys.LookupUser)
			if !known {
				return &rawError{msg: "scancel: error: Invalid user name: " + v.Value}
			}
			f.user = name
		case "signal":
			n, err := sbatch.SignalNumber(v.Value)
			if err != nil {
				return fmt.Errorf("--signal=%s: %w", v.Value, err)
			}
			f.signal = int32(n)
		case "batch":
			f.scope = phalanxv1.SignalScope_SIGNAL_SCOPE_BATCH
		case "full":
			f.scope = phalanxv1.SignalScope_SIGNAL_SCOPE_FULL
		case "verbose":
			f.verbose = true
		}
	}
	if f.scope != phalanxv1.SignalScope_SIGNAL_SCOPE_UNSPECIFIED && f.signal == 0 {
		return fmt.Errorf("--batch and --full say where --signal sends its signal: give --signal=SIG too")
	}
	refs, err := parseStepRefs(operands...)
	if err != nil {
		return err
	}
	if len(refs) == 0 && f.user == "" && f.name == "" && len(f.states) == 0 && len(f.partitions) == 0 {
		return fmt.Errorf("No job identification provided")
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	if len(refs) == 0 {
		req := f.request()
		var resp *phalanxv1.CancelJobResponse
		err := cn.call(c.Context, func(ctx context.Context) (err error) {
			resp, err = cn.api.CancelJob(ctx, req)
			return err
		})
		if err == nil && f.verbose { // the jobs the filters found, as Slurm's -v says them
			for _, id := range resp.GetCancelled() {
				fmt.Fprintln(k.sys.Stderr, f.verboseLine(jobRef{id: id}))
			}
		}
		return err
	}
	return cancelEach(c.Context, cn, refs, f, k.sys.Stderr)
}

// cancelEach cancels the jobs refs name one reference at a time, as Slurm
// does, so that one unknown ID does not stop the others. An unknown or
// ended job is passed over in silence, as Slurm's scancel does, unless -v
// asks (an error line each on stderr, exit 0 still) or the reference is a
// signal or a step's (the line, exit 1). Array tasks are looked up first:
// the tasks an array does not have are reported so, the others cancelled.
// Each cancel has its own request ID, kept across retries and failovers.
func cancelEach(ctx context.Context, cn *conn, refs []jobRef, f cancelFilter, stderr io.Writer) error {
	var listed []*phalanxv1.Job
	if tasks := slices.DeleteFunc(slices.Clone(refs), func(r jobRef) bool { return r.tasks == nil }); len(tasks) > 0 {
		var err error
		if listed, err = cn.lookupRefs(ctx, tasks); err != nil {
			return err
		}
	}
	var lines []string
	failed := false
	report := func(r jobRef, line string) {
		if !f.quiet(r) || f.verbose {
			lines = append(lines, line)
		}
		failed = failed || !f.quiet(r)
	}
	for _, r := range refs {
		req, name := f.request(r.id), r.String()
		if f.verbose {
			fmt.Fprintln(stderr, f.verboseLine(r))
		}
		if r.tasks != nil {
			named, missing := r.pick(listed)
			if len(missing) > 0 {
				report(r, killError(taskSetName(r.id, missing), "Invalid job id specified"))
			}
			if len(named) == 0 {
				continue
			}
			req, name = f.request(), jobRef{id: r.id, tasks: taskIDs(named), step: r.step}.String()
			req.ArrayTasks = []*phalanxv1.ArrayTasks{{ArrayJobId: r.id, TaskIds: taskIDs(named)}}
		}
		req.Step = r.step // a step's cancel is its SIGTERM, or --signal's
		line, err := cancelOne(ctx, cn, req, name)
		if err != nil {
			return err
		}
		if line != "" {
			report(r, line)
		}
	}
	switch {
	case failed:
		return &rawError{msg: strings.Join(lines, "\n")}
	case len(lines) > 0:
		fmt.Fprintln(stderr, strings.Join(lines, "\n"))
	}
	return nil
}

// cancelOne sends one cancel, or signal, of the jobs name names, and
// returns the error line it is worth: none when it went through.
func cancelOne(ctx context.Context, cn *conn, req *phalanxv1.CancelJobRequest, name string) (string, error) {
	var resp *phalanxv1.CancelJobResponse
	err := cn.call(ctx, func(ctx context.Context) (err error) {
		resp, err = cn.api.CancelJob(ctx, req)
		return err
	})
	switch {
	case err == nil && (req.Signal != 0 || req.Step != nil) && len(resp.Cancelled) == 0:
		return killError(name, "Job is not running (pending, or ended): nothing to signal"), nil
	case err == nil:
		return "", nil
	case isNotFound(err):
		return killError(name, "Invalid job id specified"), nil
	}
	return "", err
}

// killError is scancel's error line for the jobs name names.
func killError(name, why string) string {
	return fmt.Sprintf("scancel: error: Kill job error on job id %s: %s", name, why)
}

// taskIDs are the indices of jobs, tasks of one array.
func taskIDs(jobs []*phalanxv1.Job) []int32 {
	ids := make([]int32, len(jobs))
	for i, j := range jobs {
		ids[i] = j.GetArrayTask().GetTaskId()
	}
	return ids
}
