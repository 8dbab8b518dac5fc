package cli

import (
	"context"
	"fmt"
	"math"
	"strconv"
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
}

// cancelFilter is what scancel's options say of the jobs to cancel.
type cancelFilter struct {
	user, name         string
	states, partitions []string
	signal             int32 // scancel --signal: signal instead of cancel
	scope              phalanxv1.SignalScope
}

func (f cancelFilter) request(ids ...uint64) *phalanxv1.CancelJobRequest {
	return &phalanxv1.CancelJobRequest{JobIds: ids, User: f.user, Name: f.name, States: f.states,
		Partitions: f.partitions, RequestId: newRequestID(), Signal: f.signal, SignalScope: f.scope}
}

func (k *commands) scancel() *ucli.Command {
	return slurmCommand("scancel", "cancel jobs", k.runScancel)
}

func (k *commands) runScancel(c *ucli.Context, args []string) error {
	vals, operands, err := getopt.Parse(scancelOptions, args, getopt.Permute)
	if err != nil {
		return err
	}
	var f cancelFilter
	for _, v := range vals {
		switch v.Name {
		case "help":
			fmt.Fprintf(k.sys.Stdout, "Usage: scancel [OPTIONS] [JOBID...]\n\n%s", getopt.Usage(scancelOptions))
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
				if err != nil {
					return fmt.Errorf("--state: %w", err)
				}
				f.states = append(f.states, string(st))
			}
		case "user":
			f.user = v.Value
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
		}
	}
	if f.scope != phalanxv1.SignalScope_SIGNAL_SCOPE_UNSPECIFIED && f.signal == 0 {
		return fmt.Errorf("--batch and --full say where --signal sends its signal: give --signal=SIG too")
	}
	var ids []uint64
	var tasks []*phalanxv1.ArrayTasks
	for _, op := range operands {
		if base, idx, ok := strings.Cut(op, "_"); ok { // an array's tasks: 40_3, 40_[1-3,7]
			at, err := parseArrayTasks(base, idx)
			if err != nil {
				return err
			}
			tasks = append(tasks, at)
			continue
		}
		more, err := parseJobIDs(op)
		if err != nil {
			return err
		}
		ids = append(ids, more...)
	}
	if len(ids) == 0 && len(tasks) == 0 && f.user == "" && f.name == "" && len(f.states) == 0 && len(f.partitions) == 0 {
		return fmt.Errorf("No job identification provided")
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	if len(tasks) > 0 {
		req := f.request(ids...)
		req.ArrayTasks = tasks
		return cn.call(c.Context, func(ctx context.Context) error {
			_, err := cn.api.CancelJob(ctx, req)
			return err
		})
	}
	if len(ids) == 0 {
		req := f.request()
		return cn.call(c.Context, func(ctx context.Context) error {
			_, err := cn.api.CancelJob(ctx, req)
			return err
		})
	}
	return cancelEach(c.Context, cn, ids, f)
}

// cancelEach cancels jobs one at a time, as Slurm does, so that one unknown
// ID does not stop the others; every unknown ID gets its own error line.
// Each cancel has its own request ID, kept across retries and failovers.
func cancelEach(ctx context.Context, cn *conn, ids []uint64, f cancelFilter) error {
	var lines []string
	for _, id := range ids {
		req := f.request(id)
		var resp *phalanxv1.CancelJobResponse
		err := cn.call(ctx, func(ctx context.Context) (err error) {
			resp, err = cn.api.CancelJob(ctx, req)
			return err
		})
		switch {
		case err == nil && f.signal != 0 && len(resp.Cancelled) == 0:
			lines = append(lines, fmt.Sprintf("scancel: error: Kill job error on job id %d: Job is not running (pending, or ended): nothing to signal", id))
		case err == nil:
		case isNotFound(err):
			lines = append(lines, fmt.Sprintf("scancel: error: Kill job error on job id %d: Invalid job id specified", id))
		default:
			return err
		}
	}
	if len(lines) > 0 {
		return &rawError{msg: strings.Join(lines, "\n")}
	}
	return nil
}

// parseArrayTasks reads scancel's ARRAYID_INDEX, ARRAYID_[LIST]: the list
// as sbatch --array writes indices (ranges, steps), without a throttle.
func parseArrayTasks(base, idx string) (*phalanxv1.ArrayTasks, error) {
	id, err := strconv.ParseUint(base, 10, 64)
	if err != nil || id == 0 {
		return nil, fmt.Errorf("invalid job id %q", base+"_"+idx)
	}
	list := strings.TrimSuffix(strings.TrimPrefix(idx, "["), "]")
	spec, err := cluster.ParseArray(list, math.MaxInt32)
	if err != nil || strings.Contains(list, "%") {
		return nil, fmt.Errorf("invalid job id %q: write ARRAYID_INDEX or ARRAYID_[LIST]", base+"_"+idx)
	}
	out := &phalanxv1.ArrayTasks{ArrayJobId: id}
	for _, t := range spec.Tasks {
		out.TaskIds = append(out.TaskIds, int32(t))
	}
	return out, nil
}
