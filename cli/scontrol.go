package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

func (k *commands) scontrol() *ucli.Command {
	return slurmCommand("scontrol", "show jobs, nodes and partitions (scontrol show ...)", k.runScontrol)
}

func (k *commands) runScontrol(c *ucli.Context, args []string) error {
	if len(args) == 0 || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(k.sys.Stdout, "Usage: scontrol show job [JOBID] | node [NAME] | partition [NAME]")
		return nil
	}
	if args[0] != "show" {
		return fmt.Errorf("invalid command %q: phx supports scontrol show job|node|partition", args[0])
	}
	if len(args) < 2 || len(args) > 3 {
		return fmt.Errorf("write scontrol show job|node|partition [ID or NAME]")
	}
	var name string
	if len(args) == 3 {
		name = args[2]
	}
	switch strings.ToLower(args[1]) {
	case "job", "jobs", "jobid":
		return k.showJobs(c, name)
	case "node", "nodes":
		return k.showNodes(c, name)
	case "partition", "partitions":
		return k.showPartitions(c, name)
	}
	return fmt.Errorf("invalid entity %q for show: use job, node or partition", args[1])
}

func (k *commands) showJobs(c *ucli.Context, id string) error {
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	var jobs []*phalanxv1.Job
	if id == "" {
		jobs, err = cn.listJobs(c.Context, &phalanxv1.ListJobsRequest{IncludeFinished: true})
		if err == nil && len(jobs) == 0 {
			fmt.Fprintln(k.sys.Stdout, "No jobs in the system")
			return nil
		}
	} else {
		n, perr := strconv.ParseUint(id, 10, 64)
		if perr != nil {
			return &rawError{msg: "slurm_load_jobs error: Invalid job id specified"}
		}
		err = cn.call(c.Context, func(ctx context.Context) error {
			j, err := cn.api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: n})
			jobs = []*phalanxv1.Job{j}
			return err
		})
		if isNotFound(err) {
			return &rawError{msg: "slurm_load_jobs error: Invalid job id specified"}
		}
	}
	if err != nil {
		return err
	}
	now := k.sys.Now()
	k.printRecords(len(jobs), func(i int) string { return FormatJob(jobs[i], now, time.Local) })
	return nil
}

func (k *commands) showNodes(c *ucli.Context, name string) error {
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	req := &phalanxv1.ListNodesRequest{}
	if name != "" {
		req.Names = []string{name}
	}
	nodes, err := cn.listNodes(c.Context, req)
	if isNotFound(err) || (err == nil && name != "" && len(nodes) == 0) {
		return &rawError{msg: fmt.Sprintf("Node %s not found", name)}
	}
	if err != nil {
		return err
	}
	k.printRecords(len(nodes), func(i int) string { return FormatNode(nodes[i], time.Local) })
	return nil
}

func (k *commands) showPartitions(c *ucli.Context, name string) error {
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	var parts []*phalanxv1.Partition
	err = cn.call(c.Context, func(ctx context.Context) error {
		resp, err := cn.api.ListPartitions(ctx, &phalanxv1.ListPartitionsRequest{})
		parts = resp.GetPartitions()
		return err
	})
	if err != nil {
		return err
	}
	var shown []*phalanxv1.Partition
	for _, p := range parts {
		if name == "" || p.Name == name {
			shown = append(shown, p)
		}
	}
	if len(shown) == 0 && name != "" {
		return &rawError{msg: fmt.Sprintf("Partition %s not found", name)}
	}
	k.printRecords(len(shown), func(i int) string { return FormatPartition(shown[i]) })
	return nil
}

// printRecords prints records separated by blank lines, as scontrol does.
func (k *commands) printRecords(n int, record func(int) string) {
	for i := 0; i < n; i++ {
		if i > 0 {
			fmt.Fprintln(k.sys.Stdout)
		}
		fmt.Fprint(k.sys.Stdout, record(i))
	}
}
