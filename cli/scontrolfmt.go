package cli

import (
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// kvLines writes a record as scontrol does: the first line flush left, the
// others indented by three spaces, fields separated by one space.
func kvLines(b *strings.Builder, lines [][]string) {
	for i, l := range lines {
		if len(l) == 0 { // a key shown only when set
			continue
		}
		if i > 0 {
			b.WriteString("   ")
		}
		b.WriteString(strings.Join(l, " "))
		b.WriteByte('\n')
	}
}

func kv(k string, v any) string { return fmt.Sprintf("%s=%v", k, v) }

// eligible is when the job may start: its --begin time, else its submit;
// none while it is held, as Slurm shows it (Unknown).
func eligible(j *phalanxv1.Job) *timestamppb.Timestamp {
	if j.State == string(cluster.JobPending) && cluster.PendingReason(j.Reason).Held() {
		return nil
	}
	if b := j.GetSpec().GetBeginTime(); b != nil {
		return b
	}
	return j.SubmitTime
}

// dependency is the Dependency field as Slurm prints it: (null) once there
// is none to wait for (never given, satisfied, or the job has left the
// queue), else what the controller shows of a pending job's: each condition
// left with its state, (unfulfilled) or (failed).
func dependency(j *phalanxv1.Job) string {
	if d := j.GetSpec().GetDependency(); d != "" && j.State == string(cluster.JobPending) {
		return d // the controller's, in Slurm's form: what is left, each with its state
	}
	return "(null)"
}

// FormatJob prints a job as "scontrol show job" does.
func FormatJob(j *phalanxv1.Job, now time.Time, loc *time.Location) string {
	return formatJob(j, now, loc, false)
}

// formatJob is FormatJob; with details (-d), a job holding nodes also
// shows what it holds on each, as Slurm's scontrol -d does.
func formatJob(j *phalanxv1.Job, now time.Time, loc *time.Location, details bool) string {
	s := j.GetSpec()
	var b strings.Builder
	first := []string{kv("JobId", j.Id)}
	if a := j.ArrayTask; a != nil { // as Slurm prints a task of an array
		first = append(first, kv("ArrayJobId", a.ArrayJobId), kv("ArrayTaskId", a.TaskId))
		if a.Throttle > 0 {
			first = append(first, kv("ArrayTaskThrottle", a.Throttle))
		}
	}
	lines := [][]string{
		append(first, kv("JobName", s.GetName())),
		{kv("UserId", fmt.Sprintf("%s(%d)", s.GetUser(), s.GetUid())), kv("GroupId", fmt.Sprintf("%s(%d)", groupName(s.GetGid()), s.GetGid()))},
		{kv("Priority", j.GetPriority()), kv("Nice", s.GetNice()), kv("Account", orDefault(s.GetAccount(), "(null)")), kv("QOS", orDefault(s.GetQos(), "normal"))},
		{kv("JobState", shownState(j)), kv("Reason", reason(j)), kv("Dependency", dependency(j))},
		{kv("Requeue", requeueFlag(s)), kv("Restarts", j.Attempt), kv("BatchFlag", 1), kv("ExitCode", exitCode(j.ExitCode, j.ExitSignal))},
		{kv("RunTime", runTime(elapsed(j, now))), kv("TimeLimit", limitOrUnlimited(jobLimit(j)))},
		{kv("SubmitTime", fmtTime(j.SubmitTime, loc, "Unknown")), kv("EligibleTime", fmtTime(eligible(j), loc, "Unknown"))},
		{kv("StartTime", startTime(j, loc)), kv("EndTime", endTime(j, loc, "Unknown")), kv("Deadline", fmtTime(s.GetDeadline(), loc, "N/A"))},
		{kv("Partition", s.GetPartition())},
		{kv("ReqNodeList", orDefault(hostlist.Compress(s.GetNodelist()), "(null)")), kv("ExcNodeList", orDefault(hostlist.Compress(s.GetExclude()), "(null)"))},
		nodeListLine(j),
		batchHostLine(j),
		{kv("NumNodes", jobNodeCount(j)), kv("NumCPUs", jobCPUs(j)), kv("NumTasks", jobTaskCount(j)), kv("CPUs/Task", cpusPerTask(s))},
		{kv("TRES", jobTRES(j))},
		{kv("Socks/Node", "*"), kv("NtasksPerN:B:S:C", fmt.Sprintf("%d:0:*:*", s.GetTasksPerNode())), kv("CoreSpec", "*")},
	}
	if details {
		lines = append(lines, allocDetailLines(j)...)
	}
	stdout, stderr := stdPaths(j)
	lines = append(lines, [][]string{
		{kv("TresPerNode", tresPerNode(s)), kv("MinMemoryNode", memOrZero(s.GetMemoryMb()))},
		{kv("Features", orDefault(s.GetConstraint(), "(null)")), kv("OverSubscribe", overSubscribe(s))},
		{kv("Command", cluster.CommandLine(s.GetScriptPath(), s.GetScriptArgs()))},
		{kv("WorkDir", s.GetWorkDir())},
		commentLine(s.GetComment()),
		{kv("StdErr", stderr)},
		{kv("StdIn", "/dev/null")},
		{kv("StdOut", stdout)},
		// Phalanx's own, after Slurm's.
		{kv("MaxRestarts", s.GetMaxRestarts()), kv("RestartOn", orDefault(s.GetRestartOn(), "none"))},
		{kv("Image", orDefault(s.GetImage(), "(null)")), kv("MasterPort", orNA(int64(j.MasterPort)))},
	}...)
	if topo := topologyRequest(s); len(topo) > 0 {
		lines = append(lines, topo)
	}
	if h := s.GetHangTimeoutSeconds(); h > 0 {
		lines = append(lines, []string{kv("HangTimeout", limitOrUnlimited(time.Duration(h)*time.Second))})
	}
	if dir := s.GetCheckpointDir(); dir != "" {
		step := "none"
		if j.CheckpointStep != nil {
			step = fmt.Sprint(j.GetCheckpointStep())
		}
		keep := s.GetCheckpointKeep()
		if keep == 0 {
			keep = cluster.DefaultCheckpointKeep
		}
		lines = append(lines, []string{kv("CheckpointDir", dir), kv("CheckpointStep", step), kv("CheckpointKeep", keep)})
	}
	lines = append(lines, attemptLines(j, loc)...)
	kvLines(&b, lines)
	b.WriteString("   \n") // Slurm's records of jobs end with an empty indented line
	return b.String()
}

// requeueFlag is Slurm's Requeue=: 1 when the job may be restarted.
func requeueFlag(s *phalanxv1.JobSpec) int {
	if s.GetNoRequeue() || s.GetMaxRestarts() == 0 {
		return 0
	}
	return 1
}

// attemptLines lists the attempts of a job that was restarted (the ended
// ones while the next waits too): number, nodes, start, end, how it ended
// and why (a Phalanx addition). The attempt that holds its nodes is in the
// job's state.
func attemptLines(j *phalanxv1.Job, loc *time.Location) [][]string {
	if len(j.Attempts) < 2 && j.Attempt == 0 {
		return nil
	}
	var out [][]string
	for _, a := range j.Attempts {
		var nodes []string
		for _, n := range a.Alloc {
			nodes = append(nodes, n.Node)
		}
		line := []string{kv("Attempt", a.Attempt), kv("NodeList", hostlist.Compress(nodes)),
			kv("StartTime", fmtTime(a.StartTime, loc, "Unknown")), kv("EndTime", fmtTime(a.EndTime, loc, "Unknown")),
			kv("State", orDefault(a.State, shownState(j)))}
		if a.Cause != "" {
			line = append(line, kv("Cause", a.Cause))
		}
		if a.FaultNode != "" {
			line = append(line, kv("FaultNode", a.FaultNode))
		}
		if a.Reason != "" && a.State != "" {
			line = append(line, kv("Reason", a.Reason))
		}
		out = append(out, line)
	}
	return out
}

// overSubscribe is NO for --exclusive jobs (whole nodes), OK otherwise.
func overSubscribe(s *phalanxv1.JobSpec) string {
	if s.GetExclusive() {
		return "NO"
	}
	return "OK"
}

// topologyRequest is the Switches= and Segment= fields, when asked for.
func topologyRequest(s *phalanxv1.JobSpec) []string {
	var out []string
	if s.GetSwitches() > 0 {
		sw := fmt.Sprint(s.GetSwitches())
		if s.GetSwitchesWaitSeconds() > 0 {
			sw += "@" + runTime(time.Duration(s.GetSwitchesWaitSeconds())*time.Second)
		}
		out = append(out, kv("Switches", sw))
	}
	if s.GetSegment() > 0 {
		out = append(out, kv("Segment", s.GetSegment()))
	}
	return out
}

// nodeListLine is NodeList= (empty before any, as Slurm 22.05's), with
// SchedNodeList= for a pending job the scheduler reserved nodes for.
func nodeListLine(j *phalanxv1.Job) []string {
	line := []string{kv("NodeList", jobNodeList(j))}
	if sn := schedNodes(j); sn != "(null)" {
		line = append(line, kv("SchedNodeList", sn))
	}
	return line
}

// batchHostLine is BatchHost=, the node the batch script runs on (rank
// 0's); Slurm leaves the line out before there is one.
func batchHostLine(j *phalanxv1.Job) []string {
	if len(j.Alloc) == 0 {
		return nil
	}
	return []string{kv("BatchHost", j.Alloc[0].Node)}
}

// startTime is StartTime: when the job started, else when it is expected
// to; for one that ended without starting, when it ended, as Slurm's.
func startTime(j *phalanxv1.Job, loc *time.Location) string {
	switch {
	case j.StartTime != nil:
		return fmtTime(j.StartTime, loc, "Unknown")
	case j.State != string(cluster.JobPending) && j.EndTime != nil:
		return fmtTime(j.EndTime, loc, "Unknown")
	}
	return fmtTime(j.ExpectedStart, loc, "Unknown")
}

// limitOrUnlimited prints a time limit as scontrol and sacct do (Slurm's
// mins2time_str): "UNLIMITED" for none, else "HH:MM:SS" or "D-HH:MM:SS",
// as runTime prints every duration of scontrol.
func limitOrUnlimited(d time.Duration) string {
	if d == 0 {
		return "UNLIMITED"
	}
	return runTime(d)
}

// lookupGroup finds a group by ID; tests replace it so that their output
// does not depend on the host's groups.
var lookupGroup = user.LookupGroupId

// groupName is GroupId's name, as Slurm 22.05's gid_to_string: the
// group's, or "nobody" when the system does not know the ID.
func groupName(gid int32) string {
	g, err := lookupGroup(strconv.Itoa(int(gid)))
	if err != nil {
		return "nobody"
	}
	return g.Name
}

// jobTaskCount is NumTasks: the tasks on each node times the nodes.
func jobTaskCount(j *phalanxv1.Job) int {
	return jobNodeCount(j) * int(max(1, j.GetSpec().GetTasksPerNode()))
}

// cpusPerTask is CPUs/Task: -c, else the node's CPUs over its tasks, else
// N/A.
func cpusPerTask(s *phalanxv1.JobSpec) string {
	if c := s.GetCpusPerTask(); c > 0 {
		return fmt.Sprint(c)
	}
	return orNA(int64(s.GetCpusPerNode() / max(1, s.GetTasksPerNode())))
}

func orNA(n int64) string {
	if n == 0 {
		return "N/A"
	}
	return fmt.Sprint(n)
}

func memOrZero(mb int64) string {
	if mb == 0 {
		return "0"
	}
	return fmt.Sprintf("%dM", mb)
}

// jobHolds sums what the job holds, or for a pending job what it asks
// for.
func jobHolds(j *phalanxv1.Job) (cpus, mem, gpus int64) {
	s := j.GetSpec()
	nodes := int64(jobNodeCount(j))
	if len(j.Alloc) == 0 {
		return int64(s.GetCpusPerNode()) * nodes, s.GetMemoryMb() * nodes, int64(s.GetGpusPerNode()) * nodes
	}
	for _, a := range j.Alloc {
		cpus, mem, gpus = cpus+int64(a.Cpus), mem+a.MemoryMb, gpus+int64(len(a.Gpus))
	}
	return cpus, mem, gpus
}

// jobCPUs is NumCPUs: the CPUs the job holds, or asks for while pending
// (0 when it asked for none: Phalanx then reserves none).
func jobCPUs(j *phalanxv1.Job) int64 {
	cpus, _, _ := jobHolds(j)
	return cpus
}

// jobTRES is TRES: what the job holds, or asks for while pending.
func jobTRES(j *phalanxv1.Job) string {
	nodes := int64(jobNodeCount(j))
	cpus, mem, gpus := jobHolds(j)
	parts := []string{}
	if cpus > 0 {
		parts = append(parts, fmt.Sprintf("cpu=%d", cpus))
	}
	if mem > 0 {
		parts = append(parts, "mem="+reqMem(mem))
	}
	parts = append(parts, fmt.Sprintf("node=%d", nodes))
	if gpus > 0 {
		parts = append(parts, fmt.Sprintf("gres/gpu=%d", gpus))
	}
	return strings.Join(parts, ",")
}

// commentLine is Comment=, shown (as Slurm's) only when the job has one.
func commentLine(c string) []string {
	if c == "" {
		return nil
	}
	return []string{kv("Comment", c)}
}

// stdPaths are the job's output and error files as its batch script's
// node opens them (cluster.OutputPaths: the agents' expansion of -o and
// -e); %N stays as written until the job has a node.
func stdPaths(j *phalanxv1.Job) (stdout, stderr string) {
	s := j.GetSpec()
	v := cluster.OutputVars{JobID: j.GetId(), Name: s.GetName(), User: s.GetUser()}
	if a := j.GetArrayTask(); a != nil {
		v.Array = &cluster.ArrayTask{JobID: cluster.JobID(a.GetArrayJobId()), TaskID: int(a.GetTaskId())}
	}
	if len(j.GetAlloc()) > 0 {
		v.Node = j.GetAlloc()[0].GetNode()
	}
	return cluster.OutputPaths(s.GetOutput(), s.GetError(), s.GetWorkDir(), v)
}

// allocDetailLines are the lines scontrol -d adds to a job that holds
// nodes, as Slurm prints them: JOB_GRES= (the GPUs it holds, (null) for
// none), then one line per run of nodes holding the same memory and GPU
// indices, "Nodes=NODES Mem=MB GRES=gpu:N(IDX:LIST)". Phalanx binds no
// CPUs, so Slurm's CPU_IDs= is left out.
func allocDetailLines(j *phalanxv1.Job) [][]string {
	if len(j.Alloc) == 0 {
		return nil
	}
	_, _, gpus := jobHolds(j)
	total := "(null)"
	if gpus > 0 {
		total = fmt.Sprintf("gpu:%d", gpus)
	}
	out := [][]string{{kv("JOB_GRES", total)}}
	var names []string
	flush := func(mem int64, gres string) {
		if len(names) > 0 {
			out = append(out, []string{"  " + kv("Nodes", hostlist.Compress(names)), kv("Mem", mem), kv("GRES", gres)})
		}
	}
	var lastMem int64
	lastGres := ""
	for _, a := range j.Alloc {
		gres := ""
		if len(a.Gpus) > 0 {
			idx := slices.Clone(a.Gpus)
			slices.Sort(idx)
			gres = fmt.Sprintf("gpu:%d(IDX:%s)", len(a.Gpus), indexRanges(idx))
		}
		if len(names) > 0 && (a.MemoryMb != lastMem || gres != lastGres) {
			flush(lastMem, lastGres)
			names = nil
		}
		names, lastMem, lastGres = append(names, a.Node), a.MemoryMb, gres
	}
	flush(lastMem, lastGres)
	return out
}
