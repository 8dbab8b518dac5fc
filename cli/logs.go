package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
)

// phx logs: a task's output, read on its node by the node's agent and
// passed on by the leader (controller/logs.go), wherever the file lives.

var logsOptions = []getopt.Option{
	{Long: "help", Usage: "show this help"},
	{Long: "follow", Short: 'f', Usage: "go on printing what the task writes until it ends"},
	{Long: "task", Short: 't', HasArg: true, Usage: "the task (SLURM_PROCID) whose node's output to print (default 0)"},
	{Long: "err", Short: 'e', Usage: "print the -e (stderr) file instead of the output"},
	{Long: "tail", HasArg: true, Usage: "start this many bytes before the end: N[K|M|G]"},
}

// logsQuery is a parsed logs command line.
type logsQuery struct {
	req  *phalanxv1.JobLogsRequest
	task int
	help bool
	// arrayTask is set for ARRAYID_INDEX (req.JobId the array's ID): the
	// job is that task of the array.
	arrayTask  bool
	arrayIndex int32
}

func parseLogs(args []string) (*logsQuery, error) {
	vals, operands, err := getopt.Parse(logsOptions, args, getopt.Permute)
	if err != nil {
		return nil, err
	}
	q := &logsQuery{req: &phalanxv1.JobLogsRequest{}}
	for _, v := range vals {
		switch v.Name {
		case "help":
			q.help = true
		case "follow":
			q.req.Follow = true
		case "err":
			q.req.Stderr = true
		case "task":
			n, err := strconv.Atoi(v.Value)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("--task=%s: give a task number, 0 or more", v.Value)
			}
			q.task = n
		case "tail":
			n, err := parseBytes(v.Value)
			if err != nil {
				return nil, fmt.Errorf("--tail=%s: %w", v.Value, err)
			}
			q.req.Offset = -n
		}
	}
	if q.help {
		return q, nil
	}
	if len(operands) != 1 {
		return nil, fmt.Errorf("give one job ID: phx logs [-f] JOBID [--task N] [--err]")
	}
	base, index, isTask := strings.Cut(operands[0], "_") // a task of an array: 40_3
	id, err := strconv.ParseUint(base, 10, 64)
	if err != nil || id == 0 {
		return nil, fmt.Errorf("invalid job id %q: write JOBID or ARRAYID_INDEX", operands[0])
	}
	if isTask {
		i, err := strconv.ParseInt(index, 10, 32)
		if err != nil || i < 0 {
			return nil, fmt.Errorf("invalid job id %q: write JOBID or ARRAYID_INDEX", operands[0])
		}
		q.arrayTask, q.arrayIndex = true, int32(i)
	}
	q.req.JobId = id
	return q, nil
}

// parseBytes reads a size, N[K|M|G] bytes.
func parseBytes(v string) (int64, error) {
	num, mult := v, int64(1)
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			num = v[:n-1]
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("want a positive size such as 4096, 64K or 1M")
	}
	return n * mult, nil
}

func (k *commands) logs() *ucli.Command {
	return slurmCommand("logs", "print (or follow, -f) a task's output, read on its node", k.runLogs)
}

func (k *commands) runLogs(c *ucli.Context, args []string) error {
	q, err := parseLogs(args)
	switch {
	case err != nil:
		return err
	case q.help:
		fmt.Fprintf(k.sys.Stdout, "Usage: phx logs [-f] JOBID [--task N] [--err] [--tail SIZE]\n\n%s", getopt.Usage(logsOptions))
		return nil
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	job, err := k.logsJob(c.Context, cn, q)
	if err != nil {
		return err
	}
	q.req.JobId = job.Id
	perNode := int(max(1, job.GetSpec().GetTasksPerNode()))
	tasks := jobNodeCount(job) * perNode
	if q.task >= tasks {
		return fmt.Errorf("job %d has tasks 0 to %d: no task %d", q.req.JobId, tasks-1, q.task)
	}
	q.req.Rank = int32(q.task / perNode) // a node's tasks share its output file
	return cn.readLog(c.Context, q.req, func(data []byte) error {
		_, err := k.sys.Stdout.Write(data)
		return err
	})
}

// logsJob finds the job a logs command names: by ID, or a task of an
// array by ARRAYID_INDEX.
func (k *commands) logsJob(ctx context.Context, cn *conn, q *logsQuery) (*phalanxv1.Job, error) {
	if !q.arrayTask {
		var job *phalanxv1.Job
		err := cn.call(ctx, func(ctx context.Context) (err error) {
			job, err = cn.api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: q.req.JobId})
			return err
		})
		return job, err
	}
	jobs, err := cn.listJobs(ctx, &phalanxv1.ListJobsRequest{JobIds: []uint64{q.req.JobId}, IncludeFinished: true})
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if a := j.GetArrayTask(); a != nil && a.ArrayJobId == q.req.JobId && a.TaskId == q.arrayIndex {
			return j, nil
		}
	}
	return nil, fmt.Errorf("invalid job id %d_%d: no such task of array %d", q.req.JobId, q.arrayIndex, q.req.JobId)
}

// readLog streams a task's output file (JobLogs) to write, a chunk at a
// time; a read that follows has no time limit. It is tried again on
// another controller (a failover) only while nothing was written: a retry
// would write it twice.
func (cn *conn) readLog(ctx context.Context, req *phalanxv1.JobLogsRequest, write func([]byte) error) error {
	written := false
	return cn.streamWithin(ctx, req.Follow, func(ctx context.Context) error {
		stream, err := cn.api.JobLogs(ctx, req)
		if err != nil {
			return err
		}
		for {
			chunk, err := stream.Recv()
			switch {
			case errors.Is(err, io.EOF):
				return nil
			case err != nil && written:
				return &noRetry{err}
			case err != nil:
				return err
			case len(chunk.Data) > 0:
				written = true
				if err := write(chunk.Data); err != nil {
					return &noRetry{err}
				}
			}
		}
	})
}
