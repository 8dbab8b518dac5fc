package scheduler

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestScenarios runs the scripts in testdata/scenarios. Commands (input lines are
// "NAME key=value ..."):
//
//	topology             input: topology.conf
//	nodes                input: HOSTLIST [gpus=N cpus=N mem=MB model=M leaf=L state=S
//	                            features=F,G weight=N]
//	partitions           input: NAME nodes=HOSTLIST|all [tier=N state=S maxtime=SECONDS
//	                            maxnodes=N default=SECONDS preempt=REQUEUE]
//	jobs                 input: ID [part=P nodes=N gpus=N cpus=N mem=MB type=T prio=N
//	                            submit=SECONDS limit=SECONDS qos=Q nice=N requeued
//	                            constraint=EXPR nodelist=HOSTLIST exclude=HOSTLIST
//	                            exclusive switches=N[@SECONDS] segment=K
//	                            signal=NUM (--signal) faults=HOSTLIST (earlier attempts found them at fault)]
//	node-state           input: NAME STATE
//	schedule [at=SECONDS] [commit] [depth=N] [preempt-grace=S] [kill-grace=S]
//	                     prints the plan at epoch+at; commit starts the placed
//	                     jobs then and preempts the victims (cluster.Preempt,
//	                     naming their preemptors); depth sets
//	                     Options.ReserveDepth, the graces Options.PreemptGrace
//	                     and KillGrace (all three hold for later passes)
//	finish               input: job IDs whose tasks all exit
//	leave                input: job IDs whose tasks are all killed (a
//	                     preempted job is requeued)
//	cancel               input: job IDs cancelled (cluster.Cancel)
//	preempting           input: job IDs already signalled (Snapshot.Preempting)
//	feasible id=N        prints Feasible's verdict
//
// The plan prints placements ("place JOB: NODES leaves=N", then "backfill"
// when placed ahead of a job left waiting), preemptions ("preempt VICTIM for
// JOB"), reservations ("reserve JOB at +T on NODES") and pending jobs
// ("pend JOB: REASON [start=+T]"); times are offsets from the epoch.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		w := &world{snap: &Snapshot{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if err := w.run(t, d); err != nil {
				return "error: " + err.Error() + "\n"
			}
			return w.out
		})
	})
}

type world struct {
	snap *Snapshot
	out  string
}

func (w *world) run(t *testing.T, d *datadriven.TestData) error {
	w.out = ""
	switch d.Cmd {
	case "topology":
		tree, err := topology.Parse(strings.NewReader(d.Input))
		w.snap.Topology = tree
		return err
	case "nodes":
		return eachLine(d.Input, w.addNodes)
	case "partitions":
		return eachLine(d.Input, w.addPartition)
	case "jobs":
		return eachLine(d.Input, w.addJob)
	case "node-state":
		return eachLine(d.Input, w.setNodeState)
	case "finish":
		return eachLine(d.Input, w.finish)
	case "leave":
		return eachLine(d.Input, w.leave)
	case "cancel":
		return eachLine(d.Input, w.cancel)
	case "preempting":
		w.snap.Preempting = map[cluster.JobID]bool{}
		return eachLine(d.Input, func(id string, _ map[string]string) error {
			n, err := strconv.ParseUint(id, 10, 64)
			w.snap.Preempting[cluster.JobID(n)] = true
			return err
		})
	case "schedule":
		now := epoch
		if d.HasArg("at") {
			var at int
			d.ScanArgs(t, "at", &at)
			now = epoch.Add(time.Duration(at) * time.Second)
		}
		if d.HasArg("depth") {
			d.ScanArgs(t, "depth", &w.snap.Options.ReserveDepth)
		}
		for arg, grace := range map[string]*time.Duration{"preempt-grace": &w.snap.Options.PreemptGrace, "kill-grace": &w.snap.Options.KillGrace} {
			if d.HasArg(arg) {
				var secs int
				d.ScanArgs(t, arg, &secs)
				*grace = time.Duration(secs) * time.Second
			}
		}
		plan := Schedule(w.snap, now)
		w.out = formatPlan(w.snap, plan)
		if d.HasArg("commit") {
			return w.commit(plan, now)
		}
		return nil
	case "feasible":
		var id int
		d.ScanArgs(t, "id", &id)
		if err := Feasible(w.snap, w.job(cluster.JobID(id))); err != nil {
			return err
		}
		w.out = "ok\n"
		return nil
	}
	return fmt.Errorf("unknown command %q", d.Cmd)
}

func eachLine(input string, f func(name string, kv map[string]string) error) error {
	for _, line := range strings.Split(input, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		kv := map[string]string{}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			kv[k] = v
		}
		if err := f(fields[0], kv); err != nil {
			return fmt.Errorf("%q: %w", line, err)
		}
	}
	return nil
}

func num(kv map[string]string, key string, def int64) int64 {
	if v, ok := kv[key]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil {
			return n
		}
	}
	return def
}

func str(kv map[string]string, key, def string) string {
	if v, ok := kv[key]; ok {
		return v
	}
	return def
}

func (w *world) addNodes(expr string, kv map[string]string) error {
	names, err := hostlist.Expand(expr)
	for _, n := range names {
		w.snap.Nodes = append(w.snap.Nodes, &cluster.Node{
			Name: n, GPUs: int(num(kv, "gpus", 8)), CPUs: int(num(kv, "cpus", 64)),
			MemoryMB: num(kv, "mem", 512000), GPUModel: str(kv, "model", "NVIDIA H100 80GB HBM3"),
			Leaf: kv["leaf"], State: cluster.NodeState(str(kv, "state", "UP")),
			Weight: int(num(kv, "weight", 0)), Features: list(kv["features"]),
		})
	}
	return err
}

func (w *world) addPartition(name string, kv map[string]string) error {
	p := &cluster.Partition{Name: name, State: cluster.PartitionState(str(kv, "state", "UP")),
		PriorityTier: int(num(kv, "tier", 0)), MaxTime: seconds(kv, "maxtime"), DefaultTime: seconds(kv, "default"),
		MaxNodes: int(num(kv, "maxnodes", 0)), MinNodes: int(num(kv, "minnodes", 0)), PreemptMode: cluster.PreemptMode(str(kv, "preempt", "OFF"))}
	if kv["nodes"] == "all" {
		p.AllNodes = true
	} else {
		names, err := hostlist.Expand(kv["nodes"])
		if err != nil {
			return err
		}
		p.Nodes = names
	}
	w.snap.Partitions = append(w.snap.Partitions, p)
	return nil
}

func (w *world) addJob(id string, kv map[string]string) error {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return err
	}
	j := &cluster.Job{
		ID: cluster.JobID(n), Partition: str(kv, "part", "gpu"), State: cluster.JobPending,
		Nodes: int(num(kv, "nodes", 1)), GPUsPerNode: int(num(kv, "gpus", 0)),
		CPUsPerNode: int(num(kv, "cpus", 0)), MemoryMB: num(kv, "mem", 0), GPUType: kv["type"],
		TimeLimit: seconds(kv, "limit"), Priority: num(kv, "prio", 0), SubmitTime: epoch.Add(seconds(kv, "submit")),
		QoS: cluster.QoS(kv["qos"]), Nice: int(num(kv, "nice", 0)), Constraint: kv["constraint"],
		Exclusive: kv["exclusive"] != "" || hasKey(kv, "exclusive"), Requeued: hasKey(kv, "requeued"),
		Segment: int(num(kv, "segment", 0)), Signal: cluster.JobSignal{Signal: int(num(kv, "signal", 0)), Before: cluster.DefaultSignalTime},
		Restart: cluster.RestartPolicy{MaxRestarts: cluster.DefaultMaxRestarts, On: cluster.DefaultRestartOn}, // sbatch's default
	}
	if sw, wait, ok := strings.Cut(kv["switches"], "@"); sw != "" {
		j.Switches, err = strconv.Atoi(sw)
		if ok {
			j.SwitchesWait = seconds(map[string]string{"w": wait}, "w")
		}
	}
	var faults []string
	for key, dst := range map[string]*[]string{"nodelist": &j.NodeList, "exclude": &j.Exclude, "faults": &faults} {
		if kv[key] != "" {
			if *dst, err = hostlist.Expand(kv[key]); err != nil {
				return err
			}
		}
	}
	for i, n := range faults { // one earlier attempt per node, which failed there
		j.Attempts = append(j.Attempts, cluster.Attempt{Attempt: i, State: cluster.JobNodeFail, Cause: cluster.RestartNode, FaultNode: n})
		j.Attempt, j.Requeued = i+1, true
	}
	w.snap.Jobs = append(w.snap.Jobs, j)
	return err
}

func hasKey(kv map[string]string, key string) bool {
	_, ok := kv[key]
	return ok
}

func seconds(kv map[string]string, key string) time.Duration {
	return time.Duration(num(kv, key, 0)) * time.Second
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (w *world) setNodeState(name string, kv map[string]string) error {
	for _, n := range w.snap.Nodes {
		if n.Name == name {
			for st := range kv {
				n.State = cluster.NodeState(st)
			}
			return nil
		}
	}
	return fmt.Errorf("no node %s", name)
}

func (w *world) job(id cluster.JobID) *cluster.Job {
	for _, j := range w.snap.Jobs {
		if j.ID == id {
			return j
		}
	}
	return &cluster.Job{ID: id}
}

func (w *world) finish(id string, _ map[string]string) error {
	n, err := strconv.ParseUint(id, 10, 64)
	j := w.job(cluster.JobID(n))
	for i := range j.Tasks {
		j.Tasks[i].State = cluster.TaskExited
	}
	j.State = cluster.JobCompleted
	return err
}

// leave ends every task of a job, killed: a preempted job is requeued.
func (w *world) leave(id string, _ map[string]string) error {
	n, err := strconv.ParseUint(id, 10, 64)
	j := w.job(cluster.JobID(n))
	for i, t := range j.Tasks {
		cluster.ApplyTaskReport(j, cluster.TaskReport{JobID: j.ID, Attempt: j.Attempt, Rank: i, Node: t.Node,
			State: cluster.TaskKilled, ExitSignal: 9, Time: epoch})
	}
	return err
}

func (w *world) cancel(id string, _ map[string]string) error {
	n, err := strconv.ParseUint(id, 10, 64)
	cluster.Cancel(w.job(cluster.JobID(n)), epoch, "Cancelled")
	return err
}

// commit starts placed jobs and preempts victims as the controller would.
func (w *world) commit(plan *Plan, now time.Time) error {
	for _, pl := range plan.Placements {
		j := w.job(pl.Job)
		if err := cluster.Place(j, pl.Alloc, 29500, now, pl.By); err != nil {
			return err
		}
		j.State = cluster.JobRunning
		for i := range j.Tasks {
			j.Tasks[i].State = cluster.TaskRunning
		}
	}
	for _, pr := range plan.Preemptions {
		cluster.Preempt(w.job(pr.Victim), now, cluster.JobAttempt{Job: pr.For, Attempt: w.job(pr.For).Attempt})
	}
	return nil
}

func formatPlan(s *Snapshot, plan *Plan) string {
	var b strings.Builder
	for _, pl := range plan.Placements {
		fmt.Fprintf(&b, "place %d:", pl.Job)
		leaves := map[string]bool{}
		for _, a := range pl.Alloc.Nodes {
			fmt.Fprintf(&b, " %s", formatNodeAlloc(a))
			leaves[leafOf(s, a.Node)] = true
		}
		fmt.Fprintf(&b, " leaves=%d", len(leaves))
		if pl.By == cluster.PlacedBackfill {
			b.WriteString(" backfill")
		}
		b.WriteByte('\n')
	}
	for _, pr := range plan.Preemptions {
		fmt.Fprintf(&b, "preempt %d for %d\n", pr.Victim, pr.For)
	}
	for _, r := range plan.Reservations {
		fmt.Fprintf(&b, "reserve %d at +%s on %s\n", r.Job, r.Start.Sub(epoch), hostlist.Compress(r.Nodes))
	}
	ids := make([]cluster.JobID, 0, len(plan.Pending))
	for id := range plan.Pending {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		info := plan.Pending[id]
		fmt.Fprintf(&b, "pend %d: %s", id, info.Text())
		if !info.ExpectedStart.IsZero() {
			fmt.Fprintf(&b, " start=+%s", info.ExpectedStart.Sub(epoch))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func formatNodeAlloc(a cluster.NodeAlloc) string {
	s := a.Node
	if len(a.GPUs) > 0 {
		gpus := make([]string, len(a.GPUs))
		for i, g := range a.GPUs {
			gpus[i] = strconv.Itoa(g)
		}
		s += "[" + strings.Join(gpus, ",") + "]"
	}
	if a.CPUs > 0 || a.MemoryMB > 0 {
		s += fmt.Sprintf("{cpus=%d,mem=%d}", a.CPUs, a.MemoryMB)
	}
	return s
}

func leafOf(s *Snapshot, node string) string {
	if l := s.Topology.LeafOf(node); l != "" {
		return l
	}
	for _, n := range s.Nodes {
		if n.Name == node {
			return n.Leaf
		}
	}
	return ""
}
