package testcluster_test

import (
	"fmt"
	"math"
	"sort"

	"github.com/anishathalye/porcupine"
)

// The job table as clients see it, for porcupine: a sequential model that
// every history of the chaos test must be explainable by.
//
// Each submit carries a unique request ID, which is also the job's name, so
// every operation is about one request and the history splits into one
// partition per request (porcupine checks them independently):
//
//   - submit(req) -> job ID. The first one creates the job; a retry of the
//     same request must answer the same ID (exactly once).
//   - cancel(job) -> whether it changed the job. It can change only a job
//     that exists and has not ended; then the job is CANCELLED for good.
//     "Not changed" means the job had already ended.
//   - read(job) -> not found, or the job's state and attempt. A job is
//     found only once submitted; attempts only go up, and within one
//     attempt states only move forward (PENDING, CONFIGURING, RUNNING, a
//     terminal one); CANCELLED appears exactly when a cancel changed the
//     job. A job restarts (its next attempt, from PENDING) only after an
//     attempt that did not end for good: the workload's jobs restart on
//     node faults (sbatch's default), and a leader's pause or a majority
//     down can outlast a node's lease, whose end kills its tasks. So a job
//     read NODE_FAIL may be read again in its next attempt, or cancelled
//     before its restart; one read COMPLETED, FAILED or CANCELLED may not.
//
// An operation whose outcome the client never learned (a timeout, a
// connection lost mid-call) may have taken effect or not: it is kept with
// an unknown output and a return time at infinity, so that porcupine may
// place it anywhere after its call, the end of time included.

type opKind int

const (
	opSubmit opKind = iota
	opCancel
	opRead
)

func (k opKind) String() string { return [...]string{"submit", "cancel", "read"}[k] }

type opInput struct {
	kind opKind
	req  string // the request, the partition key
	job  uint64 // cancel, read
}

type opOutput struct {
	unknown bool   // the client does not know what happened
	job     uint64 // submit: the job's ID
	changed bool   // cancel: the job was cancelled by this call
	found   bool   // read
	state   string // read: the job's state
	attempt int32  // read: the job's attempt
}

// jobModel is one request's job: the state porcupine steps through.
type jobModel struct {
	exists    bool
	id        uint64 // 0: exists, but its ID was never seen
	attempt   int32  // latest attempt seen
	rank      int    // furthest state seen in that attempt (see stateRank)
	ended     bool   // known to have ended for good
	canceled  bool   // a cancel is known to have changed it
	mayCancel bool   // a cancel whose outcome is unknown took effect here
}

// is reports whether id can be this request's job, and the state with the
// ID learned.
func (s jobModel) is(id uint64) (bool, jobModel) {
	switch {
	case !s.exists:
		return false, s
	case s.id == 0:
		s.id = id
		return true, s
	}
	return s.id == id, s
}

// stateRank orders job states; terminal states are all 3.
func stateRank(s string) int {
	switch s {
	case "PENDING":
		return 0
	case "CONFIGURING":
		return 1
	case "RUNNING":
		return 2
	}
	return 3
}

var jobTableModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byReq := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			req := op.Input.(opInput).req
			if _, ok := byReq[req]; !ok {
				keys = append(keys, req)
			}
			byReq[req] = append(byReq[req], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byReq[k])
		}
		return out
	},
	Init: func() any { return jobModel{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(jobModel), input.(opInput), output.(opOutput)
		switch in.kind {
		case opSubmit:
			return stepSubmit(s, out)
		case opCancel:
			return stepCancel(s, in, out)
		}
		return stepRead(s, in, out)
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(opInput), output.(opOutput)
		res := "?"
		switch {
		case out.unknown:
		case in.kind == opSubmit:
			res = fmt.Sprint(out.job)
		case in.kind == opCancel:
			res = fmt.Sprint(out.changed)
		case !out.found:
			res = "not found"
		default:
			res = out.state
		}
		return fmt.Sprintf("%s(%s, job %d) -> %s", in.kind, in.req, in.job, res)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%+v", state.(jobModel)) },
}

func stepSubmit(s jobModel, out opOutput) (bool, any) {
	switch {
	case out.unknown:
		s.exists = true // it happened (or, placed at the end, it does not matter)
		return true, s
	case s.exists:
		ok, s := s.is(out.job) // a retry answers the first job
		return ok, s
	}
	s.exists, s.id = true, out.job
	return true, s
}

func stepCancel(s jobModel, in opInput, out opOutput) (bool, any) {
	if out.unknown {
		if s.exists && !s.ended {
			s.mayCancel = true
		}
		return true, s
	}
	ok, s := s.is(in.job)
	switch {
	case !ok:
		return false, s // a cancel answered about a job not submitted yet
	case out.changed && s.ended:
		return false, s // an ended job cannot be cancelled
	case out.changed:
		s.canceled, s.ended, s.rank = true, true, 3
		return true, s
	}
	s.ended, s.rank = true, 3 // not changed: it had ended already
	return true, s
}

func stepRead(s jobModel, in opInput, out opOutput) (bool, any) {
	if out.unknown {
		return true, s
	}
	if !out.found {
		if !s.exists {
			return true, s
		}
		ok, _ := s.is(in.job)
		return !ok, s // the request's job must be found once it exists
	}
	ok, s := s.is(in.job)
	if !ok {
		return false, s // found before its submit
	}
	switch {
	case out.attempt < s.attempt:
		return false, s // an earlier attempt: this read is stale
	case out.attempt > s.attempt && s.ended:
		return false, s // a job that ended for good has no next attempt
	case out.attempt > s.attempt:
		s.attempt, s.rank = out.attempt, 0
	}
	r := stateRank(out.state)
	switch {
	case r < s.rank:
		return false, s // states only move forward: this read is stale
	case s.canceled && out.state != "CANCELLED":
		return false, s
	case out.state == "CANCELLED" && !s.canceled && !s.mayCancel:
		return false, s // cancelled, but no cancel took effect
	}
	s.rank = r
	if r == 3 {
		s.ended = !restartable(out.state)
		s.canceled = out.state == "CANCELLED"
	}
	return true, s
}

// restartable reports whether a job read in terminal state st may still
// have a next attempt: lost with its node (or, where preemption
// requeues, preempted), it restarts while its policy allows.
func restartable(st string) bool { return st == "NODE_FAIL" || st == "PREEMPTED" }

// never is the return time of an operation whose outcome is unknown.
const never = math.MaxInt64
