package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/cli/sbatch"
	"github.com/phalanx-hpc/phalanx/cluster"
)

func (k *commands) sbatch() *ucli.Command {
	return slurmCommand("sbatch", "submit a batch script", k.runSbatch)
}

func (k *commands) runSbatch(c *ucli.Context, args []string) error {
	env, err := k.submitEnv()
	if err != nil {
		return err
	}
	req, err := sbatch.Parse(args, env)
	if err != nil {
		return err
	}
	if req.Version {
		return k.printVersion()
	}
	if req.Help {
		fmt.Fprintf(k.sys.Stdout, "Usage: sbatch [OPTIONS] script [args...]\n       sbatch [OPTIONS] --wrap=\"command\"\n\n%s", getopt.Usage(sbatch.Options))
		return nil
	}
	for _, w := range req.Warnings {
		fmt.Fprintf(k.sys.Stderr, "sbatch: warning: %s\n", w)
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	resp, err := cn.submitOnce(c.Context, req.Spec, req.TestOnly)
	if err != nil {
		return submitFailed(err, req.TestOnly)
	}
	for _, w := range resp.Warnings {
		fmt.Fprintf(k.sys.Stderr, "sbatch: warning: %s\n", w)
	}
	switch {
	case req.TestOnly:
		fmt.Fprintln(k.sys.Stderr, testOnlyLine(req.Spec, resp, k.loc()))
	case req.Parsable:
		fmt.Fprintf(k.sys.Stdout, "%d\n", resp.JobId)
	default:
		fmt.Fprintf(k.sys.Stdout, "Submitted batch job %d\n", resp.JobId)
	}
	if req.Wait && !req.TestOnly {
		return k.waitJob(c, cn, resp.JobId)
	}
	return nil
}

// submitOnce submits spec under one request ID, whatever the retries and
// failovers: the controllers create the job once.
func (cn *conn) submitOnce(ctx context.Context, spec *phalanxv1.JobSpec, testOnly bool) (*phalanxv1.SubmitJobResponse, error) {
	requestID := newRequestID()
	var resp *phalanxv1.SubmitJobResponse
	err := cn.call(ctx, func(ctx context.Context) (err error) {
		resp, err = cn.api.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: spec, TestOnly: testOnly, RequestId: requestID})
		return err
	})
	return resp, err
}

// submitFailed is a refused submit's error as Slurm's sbatch words it,
// "Batch job submission failed: why" ("Job submit/allocate failed: why"
// for --test-only), which scripts that retry look for; other errors (no
// controller reached) are left as they are.
func submitFailed(err error, testOnly bool) error {
	var api *APIError
	if !errors.As(err, &api) {
		return err
	}
	prefix := "Batch job submission failed: "
	if testOnly {
		prefix = "Job submit/allocate failed: "
	}
	return &APIError{Code: api.Code, Msg: prefix + api.Msg}
}

// waitPoll is how often sbatch --wait asks how the job stands.
const waitPoll = time.Second

// waitJob waits for job id to end, as sbatch --wait does, or for every
// task of the array id is the ID of, and returns an error carrying the
// exit status sbatch then has: the highest of the jobs' (waitCode). Each
// poll is bounded by --timeout; the wait is not.
func (k *commands) waitJob(c *ucli.Context, cn *conn, id uint64) error {
	var w jobWait
	open := []uint64{id} // the array's ID lists all its tasks
	for {
		// History: an ended task is listed whatever MinJobAge says.
		jobs, err := cn.listJobs(c.Context, &phalanxv1.ListJobsRequest{JobIds: open, History: true})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return fmt.Errorf("job %d: Invalid job id specified", id)
		}
		if open = w.add(jobs); len(open) == 0 {
			return w.status()
		}
		select {
		case <-c.Context.Done():
			return c.Context.Err()
		case <-time.After(waitPoll):
		}
	}
}

// jobWait is what sbatch --wait has seen end: the job with the highest
// exit status so far.
type jobWait struct {
	worst *phalanxv1.Job
	code  int
}

// add records the jobs that have ended, and returns the IDs of the others.
func (w *jobWait) add(jobs []*phalanxv1.Job) (open []uint64) {
	for _, j := range jobs {
		if !endedForGood(j) {
			open = append(open, j.Id)
			continue
		}
		if code := waitCode(j); w.worst == nil || code > w.code {
			w.worst, w.code = j, code
		}
	}
	return open
}

// endedForGood reports whether job j has ended and will not run again: an
// end state other than PREEMPTED and REQUEUED (which go back to the
// queue), with every task of its attempt stopped (until then, a FAILED job
// may yet be restarted, --restart-on).
func endedForGood(j *phalanxv1.Job) bool {
	if st := cluster.JobState(j.State); !st.Terminal() || st.ComingBack() {
		return false
	}
	for _, t := range j.Tasks {
		if !cluster.TaskState(t.State).Ended() {
			return false
		}
	}
	return true
}

// status is the error sbatch --wait returns: nil when every job exited 0.
func (w *jobWait) status() error {
	if w.code == 0 {
		return nil
	}
	j := w.worst
	return &exitStatus{code: w.code, msg: fmt.Sprintf("sbatch: error: job %s ended %s (%s), exit code %s", jobName(j), j.State, reason(j), exitCode(j.ExitCode, j.ExitSignal))}
}

// waitCode is the exit status sbatch --wait has for an ended job, as
// sbatch(1) says: "the same as the exit code of the submitted job. If the
// job terminated due to a signal rather than a normal exit, the exit code
// will be set to 1" (a job cancelled while it ran: 0:15). A job that never
// ran (cancelled while pending) has code 0, as in Slurm. A job that failed
// with no exit status of its own (one whose launch failed, 0:0) has 1:
// Slurm's launch failure leaves a status that is no exit, which its sbatch
// reads as 1.
func waitCode(j *phalanxv1.Job) int {
	switch st := cluster.JobState(j.State); {
	case j.ExitSignal != 0:
		return 1
	case j.ExitCode == 0 && (st == cluster.JobFailed || st == cluster.JobNodeFail):
		return 1
	}
	return int(j.ExitCode)
}

// testOnlyLine is the analogue of Slurm's "Job N to start at T using ...".
func testOnlyLine(spec *phalanxv1.JobSpec, resp *phalanxv1.SubmitJobResponse, loc *time.Location) string {
	part := resp.GetPartition() // the default one resolved (an older controller sends none)
	if part == "" {
		part = orDefault(spec.Partition, "(default)")
	}
	start := "unknown"
	if resp.ExpectedStart != nil {
		start = resp.ExpectedStart.AsTime().In(loc).Format(timeLayout)
	}
	return fmt.Sprintf("sbatch: Job would be accepted, expected start %s using %d node(s) in partition %s",
		start, spec.Nodes, part)
}

// submitEnv gathers the submitter's identity, directory and environment.
func (k *commands) submitEnv() (sbatch.Env, error) {
	u, err := k.sys.CurrentUser()
	if err != nil {
		return sbatch.Env{}, fmt.Errorf("cannot determine the current user: %w", err)
	}
	uid, err1 := strconv.ParseInt(u.Uid, 10, 32)
	gid, err2 := strconv.ParseInt(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return sbatch.Env{}, fmt.Errorf("user %s has a non-numeric uid %q or gid %q", u.Username, u.Uid, u.Gid)
	}
	name := u.Username
	// With a token, the job is the token's user's, whoever runs phx here.
	if id, ok := auth.Claimed(k.sys.Getenv("PHX_TOKEN")); ok {
		name, uid, gid = id.User, int64(id.UID), int64(id.GID)
	}
	cwd, err := k.sys.Getwd()
	if err != nil {
		return sbatch.Env{}, fmt.Errorf("cannot determine the working directory: %w", err)
	}
	conf, _ := k.sys.ReadFile(k.sys.ConfigPath) // a missing config is normal
	limit := confScriptLimit(conf)
	host := ""
	if k.sys.Hostname != nil {
		host, _ = k.sys.Hostname() // none recorded when the host has no name
	}
	return sbatch.Env{
		User: name, UID: int32(uid), GID: int32(gid), Cwd: cwd, Host: host,
		Environ:       k.sys.Environ(),
		ReadFile:      k.sys.ReadFile,
		MaxScriptSize: limit,
		ParseTime: func(s string) (time.Time, error) {
			return parseBeginTime(s, k.sys.Now(), k.loc())
		},
		ReadStdin: func() ([]byte, error) {
			if k.sys.Stdin == nil {
				return nil, fmt.Errorf("no standard input")
			}
			data, err := io.ReadAll(io.LimitReader(k.sys.Stdin, int64(limit)+1))
			if err == nil && len(data) > limit {
				return nil, fmt.Errorf("over the limit of %d bytes (MaxScriptSize): shorten it, "+
					"for instance by reading data or long commands from a file", limit)
			}
			return data, err
		},
	}, nil
}

// confScriptLimit reads MaxScriptSize= from phalanx.conf, the limit the
// controllers apply (config.Config.MaxScriptSize), so that phx refuses an
// oversized script before sending it; cluster.DefaultMaxScriptSize when
// the config is absent or does not say. Like confAddrs, it reads only this
// key; the controllers check the file.
func confScriptLimit(conf []byte) int {
	limit := cluster.DefaultMaxScriptSize
	for _, line := range strings.Split(string(conf), "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, field := range strings.Fields(line) {
			key, val, _ := strings.Cut(field, "=")
			if n, err := strconv.Atoi(val); err == nil && n > 0 && strings.EqualFold(key, "MaxScriptSize") {
				limit = min(n, cluster.MaxScriptSizeCeiling)
			}
		}
	}
	return limit
}

// newRequestID returns 16 random bytes in hex.
func newRequestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on Linux
	}
	return hex.EncodeToString(b[:])
}
