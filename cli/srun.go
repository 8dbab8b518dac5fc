package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/cli/sbatch"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// srun outside a job, as Slurm's: it allocates the nodes, runs the command
// as the step's tasks there, prints their output here as it comes, and
// exits as they did. Phalanx makes that a job whose batch script is `srun
// CMD` (the srun inside a job starts each node's tasks: nodeagent/srun.sh),
// its output in per-node files read back through the nodes' agents (phx
// logs -f), and cancels it when interrupted. Inside a job, the job's own
// srun comes first on PATH.

// srunPassed are the sbatch options srun takes with the same meaning.
var srunPassed = []string{"account", "begin", "chdir", "comment", "constraint", "cpu-bind", "cpus-per-task", "dependency",
	"distribution", "error", "exclude", "exclusive", "export", "gpu-bind", "gpus", "gpus-per-node", "gpus-per-task", "gres",
	"hint", "image", "job-name", "mem", "mem-per-cpu", "mem-per-gpu", "nice", "nodelist", "nodes", "ntasks",
	"ntasks-per-node", "output", "partition", "qos", "time", "help", "version"}

// srunOwn are srun's own options: passed to the srun inside the job, or
// refused.
var srunOwn = []getopt.Option{
	{Long: "label", Short: 'l', Usage: "begin each line of output with its task's number"},
	{Long: "kill-on-bad-exit", Short: 'K', OptionalArg: true, Usage: "once a task exits non-zero, stop the step's other tasks (SIGTERM)"},
	{Long: "mpi", HasArg: true, Usage: "accepted (pmix, pmi2: the tasks get Slurm's environment, no PMI server)"},
	{Long: "unbuffered", Short: 'u', Usage: "accepted: output is passed on as it comes"},
	{Long: "quiet", Short: 'Q', Usage: "no messages about the job's allocation"},
	{Long: "pty", Usage: "refused: Phalanx has no interactive steps"},
	{Long: "jobid", HasArg: true, Usage: "run the command as a step of this running job of yours, beside its tasks, on its nodes (-w, -N choose among them)"},
	{Long: "overlap", Usage: "accepted: a step run with --jobid shares the job's resources"},
}

// srunOptions is srun's table: the options passed to sbatch, then its own.
func srunOptions() []getopt.Option {
	var out []getopt.Option
	for _, o := range sbatch.Options {
		if slices.Contains(srunPassed, o.Long) {
			out = append(out, o)
		}
	}
	return append(out, srunOwn...)
}

func (k *commands) srun() *ucli.Command {
	return slurmCommand("srun", "run a command on allocated nodes and print its output (outside a job; inside one, the job's srun starts its tasks)", k.runSrun)
}

// srunRequest is a parsed srun command line.
type srunRequest struct {
	req   *sbatch.Request
	quiet bool
}

// parseSrun reads srun's command line into the job that runs it.
func parseSrun(args []string, env sbatch.Env) (*srunRequest, error) {
	vals, cmd, err := getopt.Parse(srunOptions(), args, getopt.StopAtOperand)
	if err != nil {
		return nil, err
	}
	out := &srunRequest{}
	var batch, inner []string
	named, help := false, false
	for _, v := range vals {
		switch v.Name {
		case "pty":
			return nil, fmt.Errorf("--pty: Phalanx has no interactive steps: run the command, or submit a job and read its output with phx logs -f")
		case "label":
			inner = append(inner, "-l")
		case "kill-on-bad-exit":
			if v.Value != "0" {
				inner = append(inner, "-K")
			}
		case "unbuffered", "overlap":
		case "mpi":
			inner = append(inner, shellQuote("--mpi="+v.Value))
		case "output", "error": // each task's own file, as srun's in a job
			inner = append(inner, shellQuote("--"+v.Name+"="+v.Value))
		case "quiet":
			out.quiet = true
		case "help":
			help = true
		default:
			if v.Name == "job-name" {
				named = true
			}
			if opt := findOption(v.Name); opt.HasArg || (opt.OptionalArg && v.Value != "") {
				batch = append(batch, "--"+v.Name+"="+v.Value)
			} else {
				batch = append(batch, "--"+v.Name)
			}
		}
	}
	if help {
		return &srunRequest{req: &sbatch.Request{Help: true}}, nil
	}
	if len(cmd) == 0 {
		return nil, fmt.Errorf("no command to run: srun [OPTIONS] COMMAND [ARGS...]")
	}
	if !named {
		batch = append(batch, "--job-name="+filepath.Base(cmd[0]))
	}
	// Each node's output, where its agent can read it back (and removes it
	// once read): node-local files of the user's, named afresh so that no
	// file of another cluster's job of the same ID is appended to.
	tag := newRequestID()[:8]
	batch = append(batch, "--output=/tmp/phx-srun-%u-%j-"+tag+"-%n.out", "--error=/tmp/phx-srun-%u-%j-"+tag+"-%n.err")
	line := append(append([]string{"exec", "srun"}, inner...), "--")
	for _, w := range cmd {
		line = append(line, shellQuote(w))
	}
	req, err := sbatch.Parse(append(batch, "--wrap", strings.Join(line, " ")), env)
	if err != nil {
		return nil, err
	}
	// What the user typed, as Slurm's sacct shows it: not the sbatch line
	// above, with its files of Phalanx's.
	req.Spec.SubmitLine = cluster.SubmitLineOf(append([]string{"srun"}, args...))
	out.req = req
	return out, nil
}

// findOption is the sbatch option named long.
func findOption(long string) getopt.Option {
	for _, o := range sbatch.Options {
		if o.Long == long {
			return o
		}
	}
	return getopt.Option{}
}

func (k *commands) runSrun(c *ucli.Context, args []string) error {
	if versionAsked(srunOptions(), args, getopt.StopAtOperand) {
		return k.printVersion()
	}
	if list, err := mpiAsked(args); err != nil || list {
		if list {
			fmt.Fprint(k.sys.Stdout, "MPI plugin types are...\n\tnone\n")
		}
		return err
	}
	if st, ok, err := parseSrunStep(args); err != nil || ok {
		if err != nil {
			return err
		}
		return k.runSrunStep(c, st)
	}
	if id := k.sys.Getenv("PHX_JOB_ID"); id != "" {
		return fmt.Errorf("inside job %s, the job's own srun (first on its PATH) starts its tasks; phx srun would submit another job: unset PHX_JOB_ID to do that", id)
	}
	env, err := k.submitEnv()
	if err != nil {
		return err
	}
	r, err := parseSrun(args, env)
	if err != nil {
		return err
	}
	if r.req.Help {
		fmt.Fprintf(k.sys.Stdout, "Usage: srun [OPTIONS] COMMAND [ARGS...]\n\n%s", getopt.Usage(srunOptions()))
		return nil
	}
	for _, w := range r.req.Warnings {
		fmt.Fprintf(k.sys.Stderr, "srun: warning: %s\n", w)
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	resp, err := cn.submitOnce(c.Context, r.req.Spec, false)
	if err != nil {
		return err
	}
	id := resp.JobId
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	job, err := k.srunStarted(ctx, cn, id, r.quiet)
	if err == nil && job != nil {
		// A task that never started has no output to read: the job's end
		// says why, below.
		if errs := k.srunOutput(ctx, cn, job); len(errs) > 0 && ctx.Err() == nil {
			var now *phalanxv1.Job
			_ = cn.call(ctx, func(ctx context.Context) (err error) {
				now, err = cn.api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
				return err
			})
			for _, line := range srunReadErrors(now, errs) {
				fmt.Fprintln(k.sys.Stderr, line)
			}
		}
	}
	if ctx.Err() != nil && c.Context.Err() == nil { // interrupted: the job goes too
		fmt.Fprintf(k.sys.Stderr, "srun: interrupted: cancelling job %d\n", id)
		cerr := cn.call(c.Context, func(ctx context.Context) error {
			_, err := cn.api.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{id}})
			return err
		})
		if cerr != nil {
			return cerr
		}
		return &exitStatus{code: 130, msg: fmt.Sprintf("srun: error: job %d cancelled", id)}
	}
	if err != nil {
		return err
	}
	return k.srunExit(c, cn, id)
}

// srunStarted waits until job id runs (or has ended), saying once that it
// waits, as Slurm's srun does.
func (k *commands) srunStarted(ctx context.Context, cn *conn, id uint64, quiet bool) (*phalanxv1.Job, error) {
	said, start := false, time.Now()
	for {
		var j *phalanxv1.Job
		if err := cn.call(ctx, func(ctx context.Context) (err error) {
			j, err = cn.api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
			return err
		}); err != nil {
			return nil, err
		}
		// Running, its tasks have opened their output files (or have ended).
		if st := cluster.JobState(j.State); st == cluster.JobRunning || st.Terminal() {
			if said && !quiet {
				fmt.Fprintf(k.sys.Stderr, "srun: job %d has been allocated resources\n", id)
			}
			return j, nil
		}
		if !said && !quiet && time.Since(start) >= srunQuiet {
			fmt.Fprintf(k.sys.Stderr, "srun: job %d queued and waiting for resources\n", id)
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(srunPoll):
		}
	}
}

// srunPoll is how often srun asks whether its job has started; srunQuiet
// how long it waits before saying that the job waits.
const (
	srunPoll  = 200 * time.Millisecond
	srunQuiet = 2 * time.Second
)

// srunOutput prints every node's output and errors as they come, line by
// line, until the tasks end, and returns the reads that failed, by rank.
func (k *commands) srunOutput(ctx context.Context, cn *conn, job *phalanxv1.Job) map[int32][]error {
	var wg sync.WaitGroup
	var mu sync.Mutex // one line at a time on the terminal
	errs := map[int32][]error{}
	follow := func(rank int32, stderr bool, w io.Writer) {
		defer wg.Done()
		lw := &lineWriter{w: w, mu: &mu}
		defer lw.flush()
		req := &phalanxv1.JobLogsRequest{JobId: job.Id, Rank: rank, Stderr: stderr, Follow: true, Remove: true}
		err := cn.readLog(ctx, req, func(data []byte) error {
			lw.Write(data)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			mu.Lock()
			errs[rank] = append(errs[rank], err)
			mu.Unlock()
		}
	}
	for rank := range int32(len(job.Alloc)) {
		wg.Add(2)
		go follow(rank, false, k.sys.Stdout)
		go follow(rank, true, k.sys.Stderr)
	}
	wg.Wait()
	return errs
}

// srunReadErrors are the warning lines, one per failed read, for the reads
// of the nodes whose task started: one that never did (its launch failed)
// has no output, and the job's end says why. Without the job (nil), every
// read's.
func srunReadErrors(job *phalanxv1.Job, errs map[int32][]error) []string {
	var lines []string
	for _, rank := range slices.Sorted(maps.Keys(errs)) {
		if t := taskOfRank(job, rank); job != nil && (t == nil || t.StartTime == nil) {
			continue
		}
		for _, err := range errs[rank] {
			lines = append(lines, fmt.Sprintf("srun: warning: %v", err))
		}
	}
	return lines
}

func taskOfRank(job *phalanxv1.Job, rank int32) *phalanxv1.Task {
	for _, t := range job.GetTasks() {
		if t.Rank == rank {
			return t
		}
	}
	return nil
}

// lineWriter passes whole lines on, under a shared lock, so that nodes'
// lines do not mix.
type lineWriter struct {
	w      io.Writer
	mu     *sync.Mutex
	part   []byte
	prefix string // before each line (srun -l)
}

func (l *lineWriter) Write(p []byte) {
	l.part = append(l.part, p...)
	if i := strings.LastIndexByte(string(l.part), '\n'); i >= 0 {
		l.write(l.part[:i+1])
		l.part = append(l.part[:0], l.part[i+1:]...)
	}
}

func (l *lineWriter) flush() {
	if len(l.part) > 0 {
		l.write(l.part)
		l.part = l.part[:0]
	}
}

// write writes whole lines (and a last part line), each after the prefix.
func (l *lineWriter) write(b []byte) {
	if l.prefix != "" {
		var out []byte
		for line := range strings.Lines(string(b)) {
			out = append(append(out, l.prefix...), line...)
		}
		b = out
	}
	l.mu.Lock()
	l.w.Write(b)
	l.mu.Unlock()
}

// srunExit waits for the job to end and exits as its tasks did: the
// highest exit status (the job's), 128+N for a signal, 1 for a job that
// ended otherwise.
func (k *commands) srunExit(c *ucli.Context, cn *conn, id uint64) error {
	err := k.waitJob(c, cn, id)
	var st *exitStatus
	if errors.As(err, &st) {
		st.msg = strings.Replace(st.msg, "sbatch: error:", "srun: error:", 1)
	}
	return err
}
