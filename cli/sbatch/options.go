package sbatch

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/cluster"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Options is the table of sbatch options, shared by the command line and
// #SBATCH directives.
var Options = []getopt.Option{
	{Long: "account", Short: 'A', HasArg: true, Usage: "charge the job to ACCOUNT"},
	{Long: "begin", Short: 'b', HasArg: true, Usage: "start no earlier than TIME: YYYY-MM-DD[THH:MM[:SS]], HH:MM[:SS], now+COUNT[seconds|minutes|hours|days|weeks], today, noon, ..."},
	{Long: "chdir", Short: 'D', HasArg: true, Usage: "working directory of the job"},
	{Long: "checkpoint-dir", HasArg: true, Usage: "checkpoint store on shared storage: committed steps are copied there and a restart resumes from the latest complete one"},
	{Long: "checkpoint-keep", HasArg: true, Usage: "complete checkpoint steps kept in the store (default 2)"},
	{Long: "hang-timeout", HasArg: true, Usage: "TIME (10:00 to 12:00:00): no output, no checkpoint and idle GPUs for that long is a suspected hang, which restarts the job with --restart-on=...,hang; 0: off (default: the cluster's)"},
	{Long: "constraint", Short: 'C', HasArg: true, Usage: "node features: FEATURE, a&b (all of them), a|b (any of them), a&b|c (& binds tighter), [a|b] (every node the same one)"},
	{Long: "cpus-per-task", Short: 'c', HasArg: true, Usage: "CPUs per task (times the tasks per node)"},
	{Long: "deadline", HasArg: true, Usage: "end the job (DEADLINE) if it could not end by TIME: its start plus its time limit (times as --begin)"},
	{Long: "dependency", Short: 'd', HasArg: true, Usage: "start after other jobs: after[ok|notok|any]:ID[:ID...], after:ID+MINUTES, singleton; an ID may be ARRAYID_TASKID (a task of an array); joined by , (all) or ? (any)"},
	{Long: "kill-on-invalid-dep", HasArg: true, Usage: "yes: cancel the job once its dependency can never be satisfied; no (default): it waits, DependencyNeverSatisfied"},
	{Long: "error", Short: 'e', HasArg: true, Usage: "file for stderr (pattern: %j %x %u %N ...)"},
	{Long: "exclude", Short: 'x', HasArg: true, Usage: "nodes not to use: a hostlist, e.g. gpu[001-004,010]"},
	{Long: "exclusive", OptionalArg: true, Usage: "whole nodes, shared with no other job"},
	{Long: "export", HasArg: true, Usage: "ALL (default), NONE, or [ALL,]VAR[=value],..."},
	{Long: "gpus", Short: 'G', HasArg: true, Usage: "GPUs in all: [TYPE:]N, a multiple of the node count"},
	{Long: "gpus-per-node", HasArg: true, Usage: "GPUs per node: N or TYPE:N"},
	{Long: "gpus-per-task", HasArg: true, Usage: "GPUs per task: [TYPE:]N, times --ntasks-per-node (default 1) per node"},
	{Long: "gres", HasArg: true, Usage: "generic resources: gpu[:TYPE][:N]"},
	{Long: "help", Short: 'h', Usage: "show this help"},
	{Long: "hold", Short: 'H', Usage: "submit the job held (JobHeldUser): it waits until scontrol release"},
	{Long: "image", HasArg: true, Usage: "OCI image to run the job in (default: plain process)"},
	{Long: "job-name", Short: 'J', HasArg: true, Usage: "name of the job"},
	{Long: "mail-type", HasArg: true, Usage: "accepted and ignored (warning)"},
	{Long: "mail-user", HasArg: true, Usage: "accepted and ignored (warning)"},
	{Long: "mem", HasArg: true, Usage: "memory per node: N[K|M|G|T], default unit M"},
	{Long: "mem-per-cpu", HasArg: true, Usage: "memory per CPU (times the node's CPUs): N[K|M|G|T]"},
	{Long: "mem-per-gpu", HasArg: true, Usage: "memory per GPU (times the node's GPUs): N[K|M|G|T]"},
	{Long: "nice", OptionalArg: true, Usage: "lower the priority by N (default 100); a negative N (root only) raises it"},
	{Long: "nodelist", Short: 'w', HasArg: true, Usage: "nodes the job must use: a hostlist, e.g. gpu[001-002]"},
	{Long: "nodes", Short: 'N', HasArg: true, Usage: "number of nodes: N or MIN-MAX (MIN is used)"},
	{Long: "ntasks", Short: 'n', HasArg: true, Usage: "tasks in all, the same number on every node (srun starts them)"},
	{Long: "ntasks-per-node", HasArg: true, Usage: "tasks on each node (srun starts them; the batch script runs once per node)"},
	{Long: "output", Short: 'o', HasArg: true, Usage: "file for stdout (pattern: %j %x %u %N ...)"},
	{Long: "parsable", Usage: "print only the job ID"},
	{Long: "partition", Short: 'p', HasArg: true, Usage: "partition (default: the cluster's default)"},
	{Long: "priority", HasArg: true, Usage: "job priority (integer)"},
	{Long: "qos", Short: 'q', HasArg: true, Usage: "quality of service: high, normal (default) or low"},
	{Long: "requeue", Usage: "restart the job after a failure its --restart-on names (the default)"},
	{Long: "no-requeue", Usage: "never restart the job"},
	{Long: "max-restarts", HasArg: true, Usage: "restart the job at most N times (0-128, default 3)"},
	{Long: "restart-on", HasArg: true, Usage: "causes that restart it: node (its node failed it, the default), exit (it exited non-zero), or none"},
	{Long: "signal", HasArg: true, Usage: "[B:]SIG[@SECONDS]: send SIG (a number or a name such as USR1) SECONDS (default 60) before the time limit, and at preemption; B: to the batch script alone"},
	{Long: "segment", HasArg: true, Usage: "place the nodes in groups of K, each inside one block; K must divide -N"},
	{Long: "switches", HasArg: true, Usage: "at most N leaf switches: N[@TIME], waiting up to TIME (e.g. 2@30:00) before relaxing"},
	{Long: "test-only", Usage: "validate the job and print its expected start; submit nothing"},
	{Long: "time", Short: 't', HasArg: true, Usage: "time limit: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S"},
	{Long: "wait", Short: 'W', Usage: "wait for the job to end, and exit with its exit code"},
	{Long: "wrap", HasArg: true, Usage: "wrap a command line in a /bin/sh script (command line only)"},
	{Long: "open-mode", HasArg: true, Usage: "append or truncate (the default) the output and error files when the job first starts"},
	// Accepted for compatibility, ignored with a warning (see ignored).
	{Long: "hint", HasArg: true, Usage: "accepted and ignored (warning)"},
	{Long: "gpu-bind", HasArg: true, Usage: "accepted and ignored (warning)"},
	{Long: "cpu-bind", HasArg: true, Usage: "accepted and ignored (warning)"},
	{Long: "distribution", Short: 'm', HasArg: true, Usage: "accepted and ignored (warning)"},
	{Long: "comment", HasArg: true, Usage: "a comment, shown by sacct and squeue (%k)"},
	{Long: "array", Short: 'a', HasArg: true, Usage: "a job array, one job per index: 0-15, 1,3,7, 0-31:4, with %N to run at most N at once"},
	{Long: "version", Short: 'V', Usage: "print \"slurm 22.05.8\", the Slurm release these commands follow, and Phalanx's version on stderr"},
}

// ignored options are accepted for compatibility with existing scripts; each
// use adds a warning.
var ignored = map[string]string{
	"mail-type":    "Phalanx sends no mail",
	"mail-user":    "Phalanx sends no mail",
	"hint":         "no CPU binding",
	"gpu-bind":     "the task sees its node's allocated GPUs",
	"cpu-bind":     "no CPU binding",
	"distribution": "a node's tasks are numbered in a block",
}

// builder collects option values into a spec.
type builder struct {
	spec     *phalanxv1.JobSpec
	export   string
	parsable bool
	testOnly bool
	help     bool
	version  bool
	wrap     string
	hasWrap  bool
	warnings warnings

	// GPUs asked per task or in all, resolved to GPUs per node at the end.
	perTask, total gpuRequest
	// Tasks and what they ask, resolved to per-node totals at the end
	// (tasks.go).
	tasksPerNode, ntasks, cpusPerTask int32
	nodesSet, memWhole                bool // memWhole: --mem=0
	// nodesFrom says where a node count not given with -N came from
	// ("--gpus=16 with --gpus-per-node=8"), for messages; "" for -N.
	nodesFrom            string
	memPerCPU, memPerGPU int64
	gpusPerNodeSet       bool // --gpus-per-node (the request form)
	// perNode is the last of --gpus-per-node and --gres=gpu given, as
	// written ("--gres=gpu:4"); "" for neither. gpuOpts: what each GPU
	// option gives (checkGPUOptions).
	perNode string
	gpuOpts []gpuOption

	wait      bool
	parseTime func(string) (time.Time, error)
}

// apply sets one option. Its error names the option, not the place.
func (b *builder) apply(v getopt.Value) error {
	s := b.spec
	if why, ok := ignored[v.Name]; ok {
		b.warnings.add(fmt.Sprintf("--%s is ignored: %s", v.Name, why))
		return nil
	}
	if set, ok := stringSetters[v.Name]; ok {
		set(s, v.Value)
		return nil
	}
	var err error
	switch v.Name {
	case "cpus-per-task":
		b.cpusPerTask, err = positive(v.Value)
	case "ntasks":
		b.ntasks, err = positive(v.Value)
	case "ntasks-per-node":
		b.tasksPerNode, err = positive(v.Value)
	case "mem-per-cpu":
		b.memPerCPU, err = parseMem(v.Value)
	case "mem-per-gpu":
		b.memPerGPU, err = parseMem(v.Value)
	case "checkpoint-keep":
		s.CheckpointKeep, err = positive(v.Value)
	case "dependency":
		// Checked here for a message before any contact; the controller
		// parses it again, and checks that the jobs exist.
		d, err := cluster.ParseDependency(v.Value)
		if err != nil {
			return err // it names the option
		}
		s.Dependency = d.String()
	case "kill-on-invalid-dep":
		switch strings.ToLower(v.Value) {
		case "yes":
			s.KillOnInvalidDep = true
		case "no":
			s.KillOnInvalidDep = false
		default:
			err = fmt.Errorf("want yes or no")
		}
	case "open-mode":
		var m cluster.OpenMode
		if m, err = cluster.ParseOpenMode(v.Value); err != nil {
			return err // it names the option
		}
		s.OpenMode = phalanxv1.OpenMode_OPEN_MODE_TRUNCATE
		if m == cluster.OpenAppend {
			s.OpenMode = phalanxv1.OpenMode_OPEN_MODE_APPEND
		}
	case "hang-timeout":
		s.HangTimeoutSeconds, err = parseHangTimeout(v.Value)
	case "exclude":
		s.Exclude, err = hosts(v.Value)
	case "exclusive":
		s.Exclusive, err = true, exclusive(v.Value)
	case "nice":
		s.Nice, err = parseNice(v.Value)
	case "nodelist":
		s.Nodelist, err = hosts(v.Value)
	case "qos":
		s.Qos, err = parseQoS(v.Value)
	case "requeue":
		s.NoRequeue = false
	case "no-requeue":
		s.NoRequeue = true
	case "max-restarts":
		var n int64
		if n, err = strconv.ParseInt(v.Value, 10, 32); err != nil || n < 0 || n > cluster.MaxRestartsLimit {
			err = fmt.Errorf("want a whole number from 0 to %d", cluster.MaxRestartsLimit)
		}
		s.MaxRestarts = proto.Int32(int32(n))
	case "signal":
		s.Signal, s.SignalSeconds, s.SignalBatch, err = parseSignal(v.Value)
	case "restart-on":
		var on cluster.RestartCauses
		if on, err = cluster.ParseRestartCauses(v.Value); err == nil {
			s.RestartOn = on.String()
		}
	case "segment":
		s.Segment, err = positive(v.Value)
	case "switches":
		s.Switches, s.SwitchesWaitSeconds, err = parseSwitches(v.Value)
	case "export":
		b.export = v.Value
	case "gpus-per-node":
		s.GpuType, s.GpusPerNode, err = parseGPUs(v.Value)
		b.gpusPerNodeSet = err == nil
		b.perNode = "--gpus-per-node=" + v.Value
		b.noteGPU(v, s.GpuType, s.GpusPerNode)
	case "gres":
		s.GpuType, s.GpusPerNode, err = parseGres(v.Value)
		b.perNode = "--gres=" + v.Value
		b.noteGPU(v, s.GpuType, s.GpusPerNode)
	case "gpus-per-task":
		b.perTask.typ, b.perTask.n, err = parseGPUs(v.Value)
		b.perTask.set = err == nil
		b.noteGPU(v, b.perTask.typ, b.perTask.n)
	case "gpus":
		b.total.typ, b.total.n, err = parseGPUs(v.Value)
		b.total.set = err == nil
		b.noteGPU(v, b.total.typ, b.total.n)
	case "help":
		b.help = true
	case "version":
		b.version = true
	case "begin", "deadline":
		if b.parseTime == nil {
			err = fmt.Errorf("no clock to read the time against")
			break
		}
		var at time.Time
		if at, err = b.parseTime(v.Value); err == nil && v.Name == "begin" {
			s.BeginTime = timestamppb.New(at)
		} else if err == nil {
			s.Deadline = timestamppb.New(at)
		}
	case "wait":
		b.wait = true
	case "hold":
		s.Hold = true
	case "mem":
		s.MemoryMb, err = parseMem(v.Value)
		b.memWhole = err == nil && s.MemoryMb == 0
	case "nodes":
		s.Nodes, err = ParseNodes(v.Value)
		b.nodesSet = true
	case "parsable":
		b.parsable = true
	case "priority":
		s.Priority, err = parsePriority(v.Value)
	case "test-only":
		b.testOnly = true
	case "time":
		s.TimeLimitSeconds, err = parseTime(v.Value)
	case "wrap":
		b.wrap, b.hasWrap = v.Value, true
	case "array":
		// Checked here for a message before any contact; the controller
		// checks the indices against its MaxArraySize. As in Slurm, an
		// empty --array= makes no array.
		if strings.TrimSpace(v.Value) == "" {
			s.Array = ""
			break
		}
		if err := cluster.CheckArray(v.Value, cluster.MaxArraySizeCeiling); err != nil {
			return err // it names the option
		}
		s.Array = v.Value
	default:
		return fmt.Errorf("option --%s is not handled", v.Name)
	}
	if err != nil {
		return fmt.Errorf("--%s=%s: %w", v.Name, v.Value, err)
	}
	return nil
}

var stringSetters = map[string]func(*phalanxv1.JobSpec, string){
	"account":        func(s *phalanxv1.JobSpec, v string) { s.Account = v },
	"chdir":          func(s *phalanxv1.JobSpec, v string) { s.WorkDir = v },
	"comment":        func(s *phalanxv1.JobSpec, v string) { s.Comment = v },
	"checkpoint-dir": func(s *phalanxv1.JobSpec, v string) { s.CheckpointDir = v },
	"constraint":     func(s *phalanxv1.JobSpec, v string) { s.Constraint = v },
	"error":          func(s *phalanxv1.JobSpec, v string) { s.Error = v },
	"image":          func(s *phalanxv1.JobSpec, v string) { s.Image = v },
	"job-name":       func(s *phalanxv1.JobSpec, v string) { s.Name = v },
	"output":         func(s *phalanxv1.JobSpec, v string) { s.Output = v },
	"partition":      func(s *phalanxv1.JobSpec, v string) { s.Partition = v },
}

func parseTime(v string) (int64, error) {
	d, err := cluster.ParseDuration(v)
	if err != nil {
		return 0, err
	}
	return int64(d.Seconds()), nil
}

func parsePriority(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("want a whole number, 0 or more, e.g. --priority=100")
	case n < 0: // Slurm: "Priority must be >= 0"; scontrol update refuses it too
		return 0, fmt.Errorf("want a whole number, 0 or more, e.g. --priority=100")
	}
	return n, nil
}

func positive(v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a positive integer")
	}
	return int32(n), nil
}

// ParseNodes reads -N (and scontrol update NumNodes=): N or MIN-MAX;
// Phalanx gangs a fixed count, so MIN is used.
func ParseNodes(v string) (int32, error) {
	lo, hi, isRange := strings.Cut(v, "-")
	n, err := positive(lo)
	if err != nil {
		return 0, fmt.Errorf("want N or MIN-MAX with N >= 1")
	}
	if isRange {
		m, err := positive(hi)
		if err != nil || m < n {
			return 0, fmt.Errorf("want N or MIN-MAX with 1 <= MIN <= MAX")
		}
	}
	return n, nil
}

func count(v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("GPU count %q: want a whole number, 0 or more", v)
	}
	return int32(n), nil
}

// parseGPUs reads --gpus-per-node: N or TYPE:N.
func parseGPUs(v string) (string, int32, error) {
	typ, n, ok := strings.Cut(v, ":")
	if !ok {
		typ, n = "", v
	}
	c, err := count(n)
	return typ, c, err
}

// parseGres reads --gres=gpu, gpu:N, gpu:TYPE or gpu:TYPE:N. Other
// resources are refused.
func parseGres(v string) (string, int32, error) {
	parts := strings.Split(v, ":")
	if parts[0] != "gpu" || strings.Contains(v, ",") {
		return "", 0, fmt.Errorf("only gpu is supported: write gpu[:TYPE][:N], e.g. gpu:a100:8")
	}
	switch len(parts) {
	case 1:
		return "", 1, nil
	case 2:
		if _, err := strconv.Atoi(parts[1]); err == nil {
			c, err := count(parts[1])
			return "", c, err
		}
		return parts[1], 1, nil
	case 3:
		c, err := count(parts[2])
		return parts[1], c, err
	}
	return "", 0, fmt.Errorf("write gpu[:TYPE][:N], e.g. gpu:a100:8")
}

// memUnits are --mem's suffixes, in megabytes (K is a fraction: -1024
// divides, rounding up).
var memUnits = map[string]int64{"K": -1024, "M": 1, "G": 1024, "T": 1024 * 1024}

// parseMem reads Slurm memory sizes: digits with an optional K, M, G or T
// suffix; M is the default. The result is in megabytes, rounded up; a size
// that does not fit is an error, not a wrapped number.
func parseMem(v string) (int64, error) {
	num, mult := v, int64(1)
	if n := len(v); n > 0 {
		if m, ok := memUnits[strings.ToUpper(v[n-1:])]; ok {
			num, mult = v[:n-1], m
		}
	}
	bad := fmt.Errorf("want a size such as 4096, 500M, 64G or 1T")
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, bad
	}
	tooMuch := fmt.Errorf("%s is more memory than any node has: %w", v, bad)
	if mult < 0 { // kilobytes, rounded up to a megabyte: a count past int64 may still fit
		kb, _ := new(big.Int).SetString(num, 10)
		mb, rem := new(big.Int).QuoRem(kb, big.NewInt(1024), new(big.Int))
		if rem.Sign() > 0 {
			mb.Add(mb, big.NewInt(1))
		}
		if !mb.IsInt64() {
			return 0, tooMuch
		}
		return mb.Int64(), nil
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, tooMuch
	}
	return n * mult, nil
}

// parseHangTimeout reads --hang-timeout: a Slurm time (minutes by
// default, kept to the second), 0 to turn hang detection off (-1 on the
// wire). Its range is
// the controllers' to check (cluster.ValidateHangTimeout), with the rest
// of the job.
func parseHangTimeout(v string) (int64, error) {
	d, err := cluster.ParseDurationSeconds(v) // to the second: not a time limit
	if err != nil || d != 0 {
		return int64(d.Seconds()), err
	}
	return -1, nil
}
