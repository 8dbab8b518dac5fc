package testcluster_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// The end of a chaos run: its figures, and the checks of the final state
// and of the history.

// chaosResult is the figures of a run.
type chaosResult struct {
	Seed       int64
	Duration   string
	Operations struct {
		Total, OK, Unknown         int
		Submits, Cancels, Reads    int
		AckedSubmits, JobsInSystem int
	}
	Faults struct {
		Total  int
		ByKind map[string]int
	}
	Elections             int
	LongestUnavailability string // longest time without a successful write
	Allocations           int    // attempt records checked for GPU overlap
	Linearizable          string
	Anomalies             []string
}

func (res *chaosResult) log(t *testing.T) {
	data, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("chaos figures:\n%s", data)
}

// check reads the final state and checks every property.
func (r *chaosRun) check() *chaosResult {
	res := &chaosResult{}
	r.mu.Lock()
	history := append([]porcupine.Operation(nil), r.history...)
	acked := r.acked
	res.Faults.ByKind = r.faults
	for _, n := range r.faults {
		res.Faults.Total += n
	}
	res.Elections = r.elections
	res.LongestUnavailability = longestGap(r.writesOK, time.Since(r.start)).Round(time.Millisecond).String()
	r.mu.Unlock()
	for _, op := range history {
		res.Operations.Total++
		if op.Output.(opOutput).unknown {
			res.Operations.Unknown++
		} else {
			res.Operations.OK++
		}
		switch op.Input.(opInput).kind {
		case opSubmit:
			res.Operations.Submits++
		case opCancel:
			res.Operations.Cancels++
		case opRead:
			res.Operations.Reads++
		}
	}
	res.Operations.AckedSubmits = len(acked)
	anomaly := func(format string, args ...any) { res.Anomalies = append(res.Anomalies, fmt.Sprintf(format, args...)) }

	api := r.client()
	all, err := listAll(api, &phalanxv1.ListJobsRequest{History: true}, false)
	if err != nil {
		anomaly("list every job: %v", err)
		return res
	}
	res.Operations.JobsInSystem = len(all)
	checkExactlyOnce(all, acked, anomaly)
	res.Allocations = checkAllocations(all, anomaly)
	checkFinalStates(all, anomaly)
	r.checkReplicasAgree(all, anomaly)

	result, info := porcupine.CheckOperationsVerbose(jobTableModel, history, 2*time.Minute)
	res.Linearizable = string(result)
	if result != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("phx-chaos-%d.html", r.seed)) // kept after the test
		if f, err := os.Create(path); err == nil {
			porcupine.Visualize(jobTableModel, info, f)
			f.Close()
		}
		anomaly("the history is not linearizable (%s); visualisation in %s", result, path)
		for _, ops := range illegalRequests(history, 3) {
			anomaly("not linearizable:\n%s", describeOps(ops))
		}
	}
	return res
}

// illegalRequests returns the operations of up to n requests whose own
// history (one partition of the model) is not linearizable.
func illegalRequests(history []porcupine.Operation, n int) [][]porcupine.Operation {
	var out [][]porcupine.Operation
	single := jobTableModel
	single.Partition = nil
	for _, ops := range jobTableModel.Partition(history) {
		if len(out) == n {
			break
		}
		if !porcupine.CheckOperations(single, ops) {
			out = append(out, ops)
		}
	}
	return out
}

// describeOps lists operations with their call and return times (seconds
// into the run), in call order.
func describeOps(ops []porcupine.Operation) string {
	ops = slices.Clone(ops)
	sort.Slice(ops, func(i, k int) bool { return ops[i].Call < ops[k].Call })
	var b strings.Builder
	for _, op := range ops {
		ret := "never"
		if op.Return != never {
			ret = fmt.Sprintf("%.3fs", time.Duration(op.Return).Seconds())
		}
		fmt.Fprintf(&b, "  client %d  %.3fs..%s  %s\n", op.ClientId, time.Duration(op.Call).Seconds(), ret,
			jobTableModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// longestGap is the longest interval without a successful write, from the
// start to the end of the run.
func longestGap(done []time.Duration, end time.Duration) time.Duration {
	sort.Slice(done, func(i, k int) bool { return done[i] < done[k] })
	var last, gap time.Duration
	for _, d := range done {
		gap = max(gap, d-last)
		last = d
	}
	return max(gap, end-last)
}

// checkExactlyOnce: every acknowledged submit is in the system with the ID
// it was acknowledged with, and no request made two jobs.
func checkExactlyOnce(all []*phalanxv1.Job, acked map[string]uint64, anomaly func(string, ...any)) {
	byName := map[string][]uint64{}
	for _, j := range all {
		byName[j.Spec.GetName()] = append(byName[j.Spec.GetName()], j.Id)
	}
	for name, ids := range byName {
		if len(ids) > 1 {
			anomaly("request %s created %d jobs: %v", name, len(ids), ids)
		}
	}
	for req, id := range acked {
		ids := byName[req]
		if len(ids) == 0 {
			anomaly("acknowledged submit %s (job %d) is lost", req, id)
		} else if ids[0] != id {
			anomaly("acknowledged submit %s was job %d; the system has job %d", req, id, ids[0])
		}
	}
}

// checkAllocations: over every attempt ever placed, no GPU was held by two
// at once. Raft indexes order them exactly: an attempt holds its GPUs from
// the entry that placed it until the one that released them.
func checkAllocations(all []*phalanxv1.Job, anomaly func(string, ...any)) int {
	type hold struct {
		job           uint64
		attempt       int32
		from, through uint64 // [placed, released); released 0: still held
	}
	holds := map[string][]hold{} // "node/gpu"
	n := 0
	for _, j := range all {
		for _, a := range j.Attempts {
			n++
			if a.PlacedIndex == 0 {
				anomaly("job %d attempt %d has no placement index", j.Id, a.Attempt)
			}
			for _, na := range a.Alloc {
				for _, g := range na.Gpus {
					key := fmt.Sprintf("%s/%d", na.Node, g)
					holds[key] = append(holds[key], hold{j.Id, a.Attempt, a.PlacedIndex, a.ReleasedIndex})
				}
			}
		}
	}
	for key, hs := range holds {
		sort.Slice(hs, func(i, k int) bool { return hs[i].from < hs[k].from })
		for i := 1; i < len(hs); i++ {
			prev := hs[i-1]
			if prev.through == 0 || prev.through > hs[i].from {
				anomaly("GPU %s held by job %d attempt %d (entries %d-%d) and job %d attempt %d (from %d) at once",
					key, prev.job, prev.attempt, prev.from, prev.through, hs[i].job, hs[i].attempt, hs[i].from)
			}
		}
	}
	return n
}

// checkFinalStates: once settled, every job is in exactly one terminal
// state, with every task ended and every attempt released.
func checkFinalStates(all []*phalanxv1.Job, anomaly func(string, ...any)) {
	for _, j := range all {
		if stateRank(j.State) != 3 {
			anomaly("job %d is %s after the run settled", j.Id, j.State)
		}
		for _, task := range j.Tasks {
			if !taskEnded(task.State) {
				anomaly("job %d is %s but its task %d is %s", j.Id, j.State, task.Rank, task.State)
			}
		}
		for _, a := range j.Attempts {
			if a.ReleasedIndex == 0 || a.State == "" {
				anomaly("job %d (%s): attempt %d never released its resources", j.Id, j.State, a.Attempt)
			}
		}
	}
}

// checkReplicasAgree: each replica, read on its own once it has applied
// everything, holds the same jobs in the same states.
// A replica that does not catch up within 30s fails the test.
func (r *chaosRun) checkReplicasAgree(all []*phalanxv1.Job, anomaly func(string, ...any)) {
	want := map[uint64]string{}
	for _, j := range all {
		want[j.Id] = j.State
	}
	for i, p := range r.procs.Replicas {
		conn, err := r.procs.Dial(p.API)
		if err != nil {
			anomaly("replica %d: %v", i, err)
			continue
		}
		api := phalanxv1.NewControllerServiceClient(conn)
		testcluster.Eventually(r.t, 30*time.Second, func() error {
			jobs, err := listAll(api, &phalanxv1.ListJobsRequest{History: true}, true)
			if err != nil {
				return err
			}
			got := map[uint64]string{}
			for _, j := range jobs {
				got[j.Id] = j.State
			}
			for id, st := range want {
				if got[id] != st {
					return fmt.Errorf("replica %s: job %d is %q here, %s on the leader", p.ID, id, got[id], st)
				}
			}
			if len(got) != len(want) {
				return fmt.Errorf("replica %s has %d jobs, the leader %d", p.ID, len(got), len(want))
			}
			return nil
		})
		conn.Close()
	}
}
