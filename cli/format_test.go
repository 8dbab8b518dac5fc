package cli

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/sbatch"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// testNow is the clock of the formatting tests; times in testdata are
// offsets from it (start=-65m).
var testNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// TestFormat runs testdata/*: the input lists wire objects, one per line
// ("job k=v ...", "node ...", "partition ...", plus "format STRING",
// "long" (-l), "array" (-r) and "jobs LIST" (-j) for squeue, "args ..."
// for sinfo's command line, and "noheader"); the command picks the output.
func TestFormat(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasPrefix(path, "testdata/fuzz/") {
			return // the corpora of the fuzz targets
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			in := parseObjects(t, d.Input)
			switch d.Cmd {
			case "squeue":
				jobs := namedBy(in.refs, in.jobs)
				out, err := FormatSqueue(jobs, SqueueView{Format: in.format, NoHeader: in.noHeader, Long: in.long, Now: testNow, Loc: time.UTC,
					Array: in.array, TaskNamed: tasksNamed(in.refs)})
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return out
			case "squeue-start":
				out, err := FormatSqueue(pendingJobs(in.jobs), SqueueView{Format: SqueueStartFormat, Sort: squeueStartSort, NoHeader: in.noHeader, Now: testNow, Loc: time.UTC})
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return out
			case "sinfo", "sinfo-nodes", "sinfo-reasons":
				return sinfoOut(in, map[string][]string{"sinfo-nodes": {"-N"}, "sinfo-reasons": {"-R"}}[d.Cmd])
			case "scontrol":
				return scontrolAll(in)
			case "events":
				return FormatEvents(in.events, in.noHeader, time.UTC)
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// sinfoOut runs sinfo's command line (flags, then the input's "args" and
// "noheader") on the input's partitions and nodes, at testNow in UTC.
func sinfoOut(in objects, flags []string) string {
	args := append(flags, in.args...)
	if in.noHeader {
		args = append(args, "-h")
	}
	q, err := parseSinfo(args)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	parts, nodes := in.parts, in.nodes
	if len(q.only) > 0 {
		parts, nodes = onlyPartitions(parts, nodes, q.only)
	}
	q.view.Now, q.view.Loc = testNow, time.UTC
	out, err := FormatSinfo(parts, nodes, q.view)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return out
}

// scontrolAll prints the input's jobs, nodes and partitions as scontrol
// show does, with the options of its "args" line (-o, -d).
func scontrolAll(in objects) string {
	flags, _, err := parseScontrol(in.args)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var recs []func() string
	for _, j := range in.jobs {
		recs = append(recs, func() string { return formatJob(j, testNow, time.UTC, flags.details) })
	}
	for _, n := range in.nodes {
		recs = append(recs, func() string { return FormatNode(n, time.UTC) })
	}
	for _, p := range in.parts {
		recs = append(recs, func() string { return FormatPartition(p, in.nodes) })
	}
	var b strings.Builder
	printRecords(&b, flags, len(recs), func(i int) string { return recs[i]() })
	return b.String()
}

type objects struct {
	jobs     []*phalanxv1.Job
	nodes    []*phalanxv1.Node
	parts    []*phalanxv1.Partition
	events   []*phalanxv1.Event
	format   string
	args     []string // sinfo's command line
	noHeader bool
	long     bool     // squeue -l
	array    bool     // squeue -r
	refs     []jobRef // squeue -j
}

func parseObjects(t *testing.T, input string) objects {
	t.Helper()
	var o objects
	for _, line := range strings.Split(input, "\n") {
		kind, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch kind {
		case "":
		case "format":
			o.format = rest
		case "Format": // squeue -O
			f, err := squeueLongFormat(rest)
			if err != nil {
				t.Fatal(err)
			}
			o.format = f
		case "args":
			words, err := sbatch.Split(rest)
			if err != nil {
				t.Fatal(err)
			}
			o.args = words
		case "noheader":
			o.noHeader = true
		case "long":
			o.long = true
		case "array": // squeue -r
			o.array = true
		case "jobs": // squeue -j
			refs, err := parseJobRefs(rest)
			if err != nil {
				t.Fatal(err)
			}
			o.refs = refs
		case "job":
			o.jobs = append(o.jobs, parseJob(t, attrs(t, rest)))
		case "node":
			o.nodes = append(o.nodes, parseNode(t, attrs(t, rest)))
		case "partition":
			o.parts = append(o.parts, parsePartition(t, attrs(t, rest)))
		case "event":
			o.events = append(o.events, parseEvent(t, attrs(t, rest)))
		default:
			t.Fatalf("unknown object %q", kind)
		}
	}
	return o
}

type kvs map[string]string

func attrs(t *testing.T, s string) kvs {
	t.Helper()
	words, err := sbatch.Split(s)
	if err != nil {
		t.Fatal(err)
	}
	out := kvs{}
	for _, w := range words {
		k, v, _ := strings.Cut(w, "=")
		out[k] = v
	}
	return out
}

func (a kvs) int(t *testing.T, k string) int64 {
	if a[k] == "" {
		return 0
	}
	n, err := strconv.ParseInt(a[k], 10, 64)
	if err != nil {
		t.Fatalf("%s=%s: %v", k, a[k], err)
	}
	return n
}

func (a kvs) uint(t *testing.T, k string) uint64 {
	n, err := strconv.ParseUint(a[k], 10, 64)
	if err != nil {
		t.Fatalf("%s=%s: %v", k, a[k], err)
	}
	return n
}

func (a kvs) time(t *testing.T, k string) *timestamppb.Timestamp {
	if a[k] == "" {
		return nil
	}
	d, err := time.ParseDuration(a[k])
	if err != nil {
		t.Fatalf("%s=%s: %v", k, a[k], err)
	}
	return timestamppb.New(testNow.Add(d))
}

func (a kvs) hosts(t *testing.T, k string) []string {
	if a[k] == "" {
		return nil
	}
	names, err := hostlist.Expand(a[k])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func parseJob(t *testing.T, a kvs) *phalanxv1.Job {
	limit, err := cluster.ParseDuration(orDefault(a["limit"], "0"))
	if err != nil {
		t.Fatal(err)
	}
	code, sig, _ := strings.Cut(orDefault(a["exit"], "0:0"), ":")
	ec, _ := strconv.Atoi(code)
	es, _ := strconv.Atoi(sig)
	j := &phalanxv1.Job{
		Id: a.uint(t, "id"), State: a["state"], Reason: a["reason"],
		SubmitTime: a.time(t, "submit"), StartTime: a.time(t, "start"), EndTime: a.time(t, "end"),
		ExpectedStart: a.time(t, "expected"), TimeLimitSeconds: int64(limit.Seconds()),
		Attempt: int32(a.int(t, "attempt")), MasterPort: int32(a.int(t, "port")),
		ExitCode: int32(ec), ExitSignal: int32(es), Priority: a.int(t, "prio"),
		Spec: &phalanxv1.JobSpec{
			Name: a["name"], User: a["user"], Uid: int32(a.int(t, "uid")), Gid: int32(a.int(t, "gid")),
			Account: a["account"], Partition: a["part"], Nodes: int32(a.int(t, "req-nodes")),
			GpusPerNode: int32(a.int(t, "gpus")), GpuType: a["gpu-type"], CpusPerNode: int32(a.int(t, "cpus")),
			MemoryMb: a.int(t, "mem"), WorkDir: a["workdir"],
			Output: a["output"], Error: a["error"], Image: a["image"],
			Constraint: a["constraint"], Nodelist: a.hosts(t, "nodelist"), Exclude: a.hosts(t, "exclude"),
			Qos: a["qos"], Nice: int32(a.int(t, "nice")), Switches: int32(a.int(t, "switches")),
			SwitchesWaitSeconds: a.int(t, "switches-wait-s"), Segment: int32(a.int(t, "segment")),
		},
	}
	_, j.Spec.Exclusive = a["exclusive"]
	_, j.Completing = a["completing"]
	j.SchedNodes = a.hosts(t, "sched") // the nodes reserved for a pending job
	if a["max-restarts"] != "" {
		j.Spec.MaxRestarts = proto.Int32(int32(a.int(t, "max-restarts")))
	}
	j.Spec.RestartOn = a["restart-on"]
	j.Spec.Dependency = a["dep"]
	j.Spec.ScriptPath, j.Spec.SubmitLine = a["script"], strings.ReplaceAll(a["submit-line"], "_", " ")
	j.Spec.Comment = strings.ReplaceAll(a["comment"], "_", " ")
	if a["args"] != "" {
		j.Spec.ScriptArgs = strings.Split(a["args"], ",")
	}
	if a["array-job"] != "" {
		j.ArrayTask = &phalanxv1.ArrayTask{ArrayJobId: a.uint(t, "array-job"), TaskId: int32(a.int(t, "array-task")),
			Throttle: int32(a.int(t, "throttle")), Count: int32(a.int(t, "array-count"))}
	}
	// gpu-idx=3,1/0,1: each node's GPU indices, nodes split by "/"
	// (default 0 to gpus-1 on every node).
	idx := strings.Split(a["gpu-idx"], "/")
	for i, n := range a.hosts(t, "nodes") {
		alloc := &phalanxv1.NodeAlloc{Node: n, Cpus: j.Spec.CpusPerNode, MemoryMb: j.Spec.MemoryMb}
		for g := int32(0); g < j.Spec.GpusPerNode && a["gpu-idx"] == ""; g++ {
			alloc.Gpus = append(alloc.Gpus, g)
		}
		for _, g := range strings.Split(idx[min(i, len(idx)-1)], ",") {
			if g != "" {
				v, err := strconv.Atoi(g)
				if err != nil {
					t.Fatalf("gpu-idx=%s: %v", a["gpu-idx"], err)
				}
				alloc.Gpus = append(alloc.Gpus, int32(v))
			}
		}
		j.Alloc = append(j.Alloc, alloc)
	}
	// failed-on=NODE: attempt 0 failed there by its agent's word, and the
	// job runs its attempt 1 on its nodes (or, pending, waits for it).
	if bad := a["failed-on"]; bad != "" {
		j.Attempts = []*phalanxv1.Attempt{
			{Attempt: 0, Alloc: []*phalanxv1.NodeAlloc{{Node: bad}}, StartTime: a.time(t, "submit"), EndTime: a.time(t, "start"),
				State: "NODE_FAIL", Cause: "node", FaultNode: bad, Reason: "prolog on " + bad + ": /etc/prolog exit status 1 (job 7); node drained"},
		}
		if j.State != "PENDING" {
			j.Attempts = append(j.Attempts, &phalanxv1.Attempt{Attempt: 1, Alloc: j.Alloc, StartTime: a.time(t, "start")})
		}
	}
	// placed=main|backfill: how the scheduler started the job's current
	// attempt (its record, made here when there is none).
	if by := a["placed"]; by != "" {
		if len(j.Attempts) == 0 {
			j.Attempts = []*phalanxv1.Attempt{{Attempt: j.Attempt, Alloc: j.Alloc, StartTime: j.StartTime}}
		}
		j.Attempts[len(j.Attempts)-1].PlacedBy = by
	}
	return j
}

func parseNode(t *testing.T, a kvs) *phalanxv1.Node {
	n := &phalanxv1.Node{
		Name: a["name"], Addr: a["addr"], State: a["state"], Reason: a["reason"],
		Cpus: int32(a.int(t, "cpus")), CpusUsed: int32(a.int(t, "cpus-used")),
		MemoryMb: a.int(t, "mem"), MemoryUsedMb: a.int(t, "mem-used"),
		Gpus: int32(a.int(t, "gpus")), GpusUsed: int32(a.int(t, "gpus-used")), GpuModel: a["model"],
		Leaf: a["leaf"], Weight: int32(a.int(t, "weight")), Registered: a.time(t, "registered"), LastHeartbeat: a.time(t, "seen"),
		Sockets: int32(a.int(t, "sockets")), CoresPerSocket: int32(a.int(t, "cores")), ThreadsPerCore: int32(a.int(t, "threads")),
	}
	if a["parts"] != "" {
		n.Partitions = strings.Split(a["parts"], ",")
	}
	if a["stored"] != "" { // the state as stored: displayed as the controller displays it
		n.State = cluster.DisplayState(&cluster.Node{State: cluster.NodeState(a["stored"]), CPUs: int(n.Cpus), GPUs: int(n.Gpus)},
			int(n.GpusUsed), int(n.CpusUsed))
	}
	n.ReasonUser, n.ReasonTime = a["reason-user"], a.time(t, "reason-time")
	n.NotResponding = a["not-responding"] == "true"
	if a["nics"] != "" {
		n.Nics = parseNICs(t, a["nics"])
	}
	if a["features"] != "" {
		n.Features = strings.Split(a["features"], ",")
	}
	return n
}

// parseNICs reads "DEV/PORT:STATE[/PHYS]:RATE:LINKLAYER[:GPUS:AFFINITY]",
// separated by "|"; GPUS is comma-separated.
func parseNICs(t *testing.T, s string) []*phalanxv1.NICInfo {
	var out []*phalanxv1.NICInfo
	for _, spec := range strings.Split(s, "|") {
		f := strings.Split(spec, ":")
		if len(f) < 4 {
			t.Fatalf("nic %q: want DEV/PORT:STATE:RATE:LINKLAYER[:GPUS:AFFINITY]", spec)
		}
		dev, port, _ := strings.Cut(f[0], "/")
		p, err := strconv.Atoi(port)
		if err != nil {
			t.Fatal(err)
		}
		state, phys, _ := strings.Cut(f[1], "/")
		n := &phalanxv1.NICInfo{Device: dev, Port: int32(p), State: state, PhysState: phys, Rate: f[2], LinkLayer: f[3]}
		if len(f) >= 6 {
			for _, g := range strings.Split(f[4], ",") {
				i, err := strconv.Atoi(g)
				if err != nil {
					t.Fatal(err)
				}
				n.Gpus = append(n.Gpus, int32(i))
			}
			n.Affinity = f[5]
		}
		out = append(out, n)
	}
	return out
}

func parsePartition(t *testing.T, a kvs) *phalanxv1.Partition {
	secs := func(k string) int64 {
		d, err := cluster.ParseDuration(orDefault(a[k], "0"))
		if err != nil {
			t.Fatal(err)
		}
		return int64(d.Seconds())
	}
	_, isDefault := a["default"]
	_, exclusive := a["exclusive"]
	p := &phalanxv1.Partition{
		Name: a["name"], Nodes: a.hosts(t, "nodes"), Default: isDefault, State: a["state"],
		MaxTimeSeconds: secs("max"), DefaultTimeSeconds: secs("deftime"),
		MaxNodes: int32(a.int(t, "max-nodes")), MinNodes: int32(a.int(t, "min-nodes")), PriorityTier: int32(a.int(t, "tier")), PreemptMode: a["preempt"],
		Exclusive: exclusive,
	}
	if a["groups"] != "" {
		p.AllowGroups = strings.Split(a["groups"], ",")
	}
	if a["accounts"] != "" {
		p.AllowAccounts = strings.Split(a["accounts"], ",")
	}
	if a["deny-accounts"] != "" {
		p.DenyAccounts = strings.Split(a["deny-accounts"], ",")
	}
	return p
}

func TestPad(t *testing.T) {
	for _, tc := range []struct {
		s     string
		width int
		right bool
		want  string
	}{
		{"abc", 5, true, "  abc"}, {"abc", 5, false, "abc  "}, {"abcdef", 3, true, "abc"},
		{"héllo", 3, false, "hél"}, {"x", 0, true, "x"},
	} {
		if got := pad(tc.s, tc.width, tc.right); got != tc.want {
			t.Errorf("pad(%q, %d, %v) = %q, want %q", tc.s, tc.width, tc.right, got, tc.want)
		}
	}
}

// controllerInfo is a replica as ListControllers returns it; role "" makes
// it unreachable.
func controllerInfo(id, role string, applied uint64) *phalanxv1.ControllerInfo {
	ci := &phalanxv1.ControllerInfo{
		Id: id, RaftAddr: "10.0.0." + id[len(id)-1:] + ":7819", ApiAddr: "10.0.0." + id[len(id)-1:] + ":7817", Voter: true,
	}
	if role == "" {
		return ci
	}
	ci.Reachable = true
	ci.Status = &phalanxv1.ControllerStatus{
		Id: id, Role: role, AppliedIndex: applied, CommitIndex: 120, LastLogIndex: 121, Term: 3,
		LeaderId: "ctl1", DurableIndex: applied - 2,
	}
	if role != "Leader" {
		ci.Status.LastContact = timestamppb.New(testNow.Add(-2 * time.Second))
	}
	return ci
}

func TestFormatController(t *testing.T) {
	unreachable := controllerInfo("ctl3", "", 0)
	unreachable.Error = `rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 10.0.0.3:7817: connect: connection refused"`
	unregistered := controllerInfo("ctl4", "", 0)
	unregistered.ApiAddr, unregistered.Voter, unregistered.Error = "", false, "its API address is not recorded yet"
	candidate := controllerInfo("ctl5", "Candidate", 90)
	candidate.Status.LeaderId, candidate.Status.LastContact = "", nil
	for _, tc := range []struct {
		name string
		in   *phalanxv1.ControllerInfo
		want string
	}{
		{"leader", controllerInfo("ctl1", "Leader", 120),
			"ControllerId=ctl1 Address=10.0.0.1:7819 ApiAddress=10.0.0.1:7817 Role=Leader AppliedIndex=120 LastContact=N/A\n" +
				"   Voter=yes Term=3 LeaderId=ctl1\n" +
				"   CommitIndex=120 LastLogIndex=121 DurableIndex=118\n"},
		{"follower", controllerInfo("ctl2", "Follower", 119),
			"ControllerId=ctl2 Address=10.0.0.2:7819 ApiAddress=10.0.0.2:7817 Role=Follower AppliedIndex=119 LastContact=2024-05-01T11:59:58\n" +
				"   Voter=yes Term=3 LeaderId=ctl1\n" +
				"   CommitIndex=120 LastLogIndex=121 DurableIndex=117\n"},
		{"unreachable", unreachable,
			"ControllerId=ctl3 Address=10.0.0.3:7819 ApiAddress=10.0.0.3:7817 Role=Unreachable AppliedIndex=N/A LastContact=N/A\n" +
				"   Voter=yes Term=N/A LeaderId=N/A\n" +
				"   CommitIndex=N/A LastLogIndex=N/A DurableIndex=N/A\n" +
				`   Reason=connection error: desc = "transport: Error while dialing: dial tcp 10.0.0.3:7817: connect: connection refused"` + "\n"},
		{"not registered, not a voter", unregistered,
			"ControllerId=ctl4 Address=10.0.0.4:7819 ApiAddress=(null) Role=Unreachable AppliedIndex=N/A LastContact=N/A\n" +
				"   Voter=no Term=N/A LeaderId=N/A\n" +
				"   CommitIndex=N/A LastLogIndex=N/A DurableIndex=N/A\n" +
				"   Reason=its API address is not recorded yet\n"},
		{"candidate never in contact", candidate,
			"ControllerId=ctl5 Address=10.0.0.5:7819 ApiAddress=10.0.0.5:7817 Role=Candidate AppliedIndex=90 LastContact=N/A\n" +
				"   Voter=yes Term=3 LeaderId=(null)\n" +
				"   CommitIndex=120 LastLogIndex=121 DurableIndex=88\n"},
	} {
		if got := FormatController(tc.in, time.UTC); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, got, tc.want)
		}
	}
}

func TestFormatPing(t *testing.T) {
	unregistered := controllerInfo("ctl4", "", 0)
	unregistered.ApiAddr = ""
	for _, tc := range []struct {
		name    string
		in      []*phalanxv1.ControllerInfo
		want    string
		wantErr string
	}{
		{"all up", []*phalanxv1.ControllerInfo{controllerInfo("ctl1", "Leader", 9), controllerInfo("ctl2", "Follower", 9)},
			"Controller ctl1 (leader) at 10.0.0.1:7817 is UP\nController ctl2 at 10.0.0.2:7817 is UP\n", ""},
		{"one down, one unregistered", []*phalanxv1.ControllerInfo{controllerInfo("ctl1", "Follower", 9), controllerInfo("ctl2", "Leader", 9), controllerInfo("ctl3", "", 0), unregistered},
			"Controller ctl1 at 10.0.0.1:7817 is UP\nController ctl2 (leader) at 10.0.0.2:7817 is UP\n" +
				"Controller ctl3 at 10.0.0.3:7817 is DOWN\nController ctl4 at 10.0.0.4:7819 is DOWN\n", ""},
		{"no leader", []*phalanxv1.ControllerInfo{controllerInfo("ctl1", "Candidate", 9), controllerInfo("ctl2", "", 0)},
			"Controller ctl1 at 10.0.0.1:7817 is UP\nController ctl2 at 10.0.0.2:7817 is DOWN\n", "no controller is the leader"},
		{"none up", []*phalanxv1.ControllerInfo{controllerInfo("ctl1", "", 0)},
			"Controller ctl1 at 10.0.0.1:7817 is DOWN\n", "no controller is UP"},
	} {
		if got := FormatPing(tc.in); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, got, tc.want)
		}
		err := pingError(tc.in)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.HasPrefix(err.Error(), tc.wantErr)) {
			t.Errorf("%s: pingError = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestAddControllerRequest(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    *phalanxv1.AddControllerRequest
		wantErr string
	}{
		{[]string{"ctl4", "10.0.0.4:7819"}, &phalanxv1.AddControllerRequest{Id: "ctl4", RaftAddr: "10.0.0.4:7819"}, ""},
		{[]string{"ctl4", "10.0.0.4:7819", "10.0.0.4"}, &phalanxv1.AddControllerRequest{Id: "ctl4", RaftAddr: "10.0.0.4:7819", ApiAddr: "10.0.0.4:7817"}, ""},
		{[]string{"ctl4", "[::1]:7819", "[::1]:9000"}, &phalanxv1.AddControllerRequest{Id: "ctl4", RaftAddr: "[::1]:7819", ApiAddr: "[::1]:9000"}, ""},
		{[]string{"ctl4"}, nil, "raft add takes the new controller's ID and Raft address"},
		{[]string{"ctl4", "a:1", "b:2", "c"}, nil, "raft add takes the new controller's ID and Raft address"},
		{[]string{"10.0.0.4:7819", "ctl4"}, nil, `the Raft address "ctl4" is not HOST:PORT`},
		{[]string{"ctl4", ":7819"}, nil, `the Raft address ":7819" is not HOST:PORT`},
	} {
		got, err := addControllerRequest(tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || !strings.HasSuffix(err.Error(), ": write scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT]") {
				t.Errorf("%q: err %v, want %q...", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !proto.Equal(got, tc.want) {
			t.Errorf("%q = %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
}

// pendingJobs is what squeue --start lists: the pending jobs.
func pendingJobs(jobs []*phalanxv1.Job) []*phalanxv1.Job {
	var out []*phalanxv1.Job
	for _, j := range jobs {
		if j.State == string(cluster.JobPending) {
			out = append(out, j)
		}
	}
	return out
}
