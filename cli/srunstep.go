package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// srun --jobid=ID: a step in a running job, from outside it (Slurm's srun
// --jobid --overlap, e.g. nvidia-smi on a training job's nodes). The
// leader signs a step credential for each node and its agent runs the
// command beside the job's tasks, as the job's user, with the job's
// environment and GPUs (controller/steps.go, nodeagent/step.go). The
// step shares the job's resources: it allocates nothing.

// srunStepOptions are the options that apply to such a step; any other
// is refused.
var srunStepOptions = []string{"jobid", "overlap", "nodelist", "nodes", "label", "quiet", "unbuffered", "kill-on-bad-exit", "mpi", "help"}

// srunStep is a parsed srun --jobid command line.
type srunStep struct {
	job   uint64
	nodes []string // -w, expanded
	count int      // -N: the job's first nodes; 0: all (or -w's)
	label bool
	cmd   []string
}

// parseSrunStep reads a command line that has --jobid (ok false: it has
// none).
func parseSrunStep(args []string) (st *srunStep, ok bool, err error) {
	vals, cmd, err := getopt.Parse(srunOptions(), args, getopt.StopAtOperand)
	has := func(name string) bool {
		return slices.ContainsFunc(vals, func(v getopt.Value) bool { return v.Name == name })
	}
	if err != nil || !has("jobid") || has("help") {
		return nil, false, err
	}
	st = &srunStep{cmd: cmd}
	for _, v := range vals {
		if !slices.Contains(srunStepOptions, v.Name) {
			return nil, true, fmt.Errorf("--%s does not apply with --jobid: a step of a running job shares the job's resources and allocates none (use -w or -N to choose among its nodes)", v.Name)
		}
		switch v.Name {
		case "jobid":
			if st.job, err = strconv.ParseUint(v.Value, 10, 64); err != nil || st.job == 0 {
				return nil, true, fmt.Errorf("--jobid=%s: not a job ID (a number, such as 42)", v.Value)
			}
		case "nodelist":
			if st.nodes, err = hostlist.Expand(v.Value); err != nil {
				return nil, true, fmt.Errorf("--nodelist=%s: %w", v.Value, hostlistError(err))
			}
		case "nodes":
			if st.count, err = strconv.Atoi(v.Value); err != nil || st.count < 1 {
				return nil, true, fmt.Errorf("--nodes=%s: with --jobid, a number of the job's nodes (1 or more)", v.Value)
			}
		case "label":
			st.label = true
		}
	}
	if len(cmd) == 0 {
		return nil, true, fmt.Errorf("no command to run: srun --jobid=ID [OPTIONS] COMMAND [ARGS...]")
	}
	return st, true, nil
}

// runSrunStep runs the step and exits as its commands did: the highest
// exit status over the nodes.
func (k *commands) runSrunStep(c *ucli.Context, st *srunStep) error {
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	req := &phalanxv1.RunStepRequest{JobId: st.job, Argv: st.cmd, Nodes: st.nodes}
	if st.count > 0 {
		var j *phalanxv1.Job
		if err := cn.call(c.Context, func(ctx context.Context) (err error) {
			j, err = cn.api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: st.job})
			return err
		}); err != nil {
			return err
		}
		req.Nodes, err = firstNodes(j, st.nodes, st.count)
		if err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var mu sync.Mutex
	writers := map[int32]*lineWriter{}
	code := 0
	err = cn.streamWithin(ctx, true, func(ctx context.Context) error {
		stream, err := cn.api.RunStep(ctx, req)
		if err != nil {
			return err
		}
		started := false
		for {
			o, err := stream.Recv()
			switch {
			case errors.Is(err, io.EOF):
				return nil
			case err != nil && started:
				return &noRetry{err}
			case err != nil:
				return err // before anything ran: only a not-leader answer is tried again
			}
			started = true
			w := writers[o.Rank]
			if w == nil {
				w = &lineWriter{w: k.sys.Stdout, mu: &mu}
				if st.label {
					w.prefix = fmt.Sprintf("%d: ", o.Rank)
				}
				writers[o.Rank] = w
			}
			if len(o.Data) > 0 {
				w.Write(o.Data)
			}
			if o.Exited {
				w.flush()
				code = max(code, int(o.ExitCode))
			}
		}
	})
	for _, w := range writers {
		w.flush()
	}
	switch {
	case ctx.Err() != nil && c.Context.Err() == nil:
		return &exitStatus{code: 130, msg: fmt.Sprintf("srun: interrupted: the step of job %d is stopped", st.job)}
	case err != nil:
		return err
	case code != 0:
		return &exitStatus{code: code, msg: fmt.Sprintf("srun: error: a task of the step in job %d exited with status %d", st.job, code)}
	}
	return nil
}

// firstNodes is -N with --jobid: the first count of the job's nodes (of
// those -w named, when it did).
func firstNodes(j *phalanxv1.Job, named []string, count int) ([]string, error) {
	var out []string
	for _, a := range j.Alloc {
		if len(named) == 0 || slices.Contains(named, a.Node) {
			out = append(out, a.Node)
		}
	}
	if len(out) < count {
		return nil, fmt.Errorf("--nodes=%d: job %d has %d such nodes", count, j.Id, len(out))
	}
	return out[:count], nil
}

// mpiAsked checks srun's --mpi values before anything runs, as Slurm's
// srun does (the srun inside the job takes the same: nodeagent/srun.sh):
// pmix, pmix_v*, pmi2 or none; list is answered here (list true).
func mpiAsked(args []string) (list bool, err error) {
	vals, _, err := getopt.Parse(srunOptions(), args, getopt.StopAtOperand)
	if err != nil {
		return false, nil // parseSrun and parseSrunStep say why
	}
	for _, v := range vals {
		switch {
		case v.Name != "mpi", v.Value == "none", v.Value == "pmi2", v.Value == "pmix", strings.HasPrefix(v.Value, "pmix_v"):
		case v.Value == "list":
			return true, nil
		default:
			return false, fmt.Errorf("Invalid MPI type '%s', --mpi=list for acceptable types", v.Value)
		}
	}
	return false, nil
}
