package cluster

import (
	"testing"

	"pgregory.net/rapid"
)

// TestApplyTaskReportOrderAndRepeats: whatever order an N-task gang's
// reports arrive in, and however often each is repeated, the job ends
// COMPLETED exactly when every task exited 0, FAILED otherwise, holds no
// resources once every task ended, and a repeated report never changes it.
func TestApplyTaskReportOrderAndRepeats(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(rt, "tasks")
		j := &Job{ID: 1, Nodes: n, State: JobPending}
		var alloc Allocation
		for i := 0; i < n; i++ {
			alloc.Nodes = append(alloc.Nodes, NodeAlloc{Node: string(rune('a' + i))})
		}
		if err := Place(j, alloc, 1, at(0), PlacedMain); err != nil {
			rt.Fatal(err)
		}
		var reports []TaskReport
		allZero := true
		for i := 0; i < n; i++ {
			code := rapid.SampledFrom([]int{0, 0, 1}).Draw(rt, "code")
			allZero = allZero && code == 0
			node := alloc.Nodes[i].Node
			reports = append(reports,
				TaskReport{Rank: i, Node: node, State: TaskRunning, Time: at(1)},
				TaskReport{Rank: i, Node: node, State: TaskExited, ExitCode: code, Time: at(2 + i)})
		}
		order := rapid.Permutation(reports).Draw(rt, "order")
		for _, r := range order {
			ApplyTaskReport(j, r)
			if ApplyTaskReport(j, r) {
				rt.Fatalf("repeating %+v changed the job", r)
			}
		}
		want := JobFailed
		if allZero {
			want = JobCompleted
		}
		if j.State != want || j.Live() {
			rt.Fatalf("job %s live %v; want %s, not live", j.State, j.Live(), want)
		}
		if want == JobCompleted && !j.EndTime.Equal(at(1+n)) {
			rt.Fatalf("EndTime %v; want the last task's end %v", j.EndTime, at(1+n))
		}
		for _, task := range j.Tasks {
			if task.State != TaskExited {
				rt.Fatalf("task %d is %s after its exit report", task.Rank, task.State)
			}
		}
	})
}
