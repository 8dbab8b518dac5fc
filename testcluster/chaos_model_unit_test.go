package testcluster_test

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// The model must catch what it is there to catch: each history below is
// checked with jobTableModel and must be (or not be) linearizable.
func TestJobTableModel(t *testing.T) {
	sub := func(client int, call, ret int64, req string, job uint64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: opInput{kind: opSubmit, req: req}, Call: call, Output: opOutput{job: job}, Return: ret}
	}
	subLost := func(client int, call int64, req string) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: opInput{kind: opSubmit, req: req}, Call: call, Output: opOutput{unknown: true}, Return: never}
	}
	read := func(client int, call, ret int64, req string, job uint64, state string) porcupine.Operation {
		out := opOutput{found: state != "", state: state}
		return porcupine.Operation{ClientId: client, Input: opInput{kind: opRead, req: req, job: job}, Call: call, Output: out, Return: ret}
	}
	readAt := func(client int, call, ret int64, req string, job uint64, state string, attempt int32) porcupine.Operation {
		op := read(client, call, ret, req, job, state)
		out := op.Output.(opOutput)
		out.attempt = attempt
		op.Output = out
		return op
	}
	cancel := func(client int, call, ret int64, req string, job uint64, changed bool) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: opInput{kind: opCancel, req: req, job: job}, Call: call, Output: opOutput{changed: changed}, Return: ret}
	}
	cancelLost := func(client int, call int64, req string, job uint64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: opInput{kind: opCancel, req: req, job: job}, Call: call, Output: opOutput{unknown: true}, Return: never}
	}
	for _, tc := range []struct {
		name    string
		history []porcupine.Operation
		ok      bool
	}{
		{"a job's life", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), read(1, 11, 12, "a", 1, "PENDING"), read(1, 13, 14, "a", 1, "RUNNING"),
			read(0, 15, 16, "a", 1, "COMPLETED"), cancel(0, 17, 18, "a", 1, false)}, true},
		{"a stale read after a newer one", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), read(1, 11, 12, "a", 1, "RUNNING"), read(0, 13, 14, "a", 1, "PENDING")}, false},
		{"concurrent reads may see either order", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), read(1, 11, 20, "a", 1, "RUNNING"), read(0, 12, 19, "a", 1, "PENDING")}, true},
		{"found before it was submitted", []porcupine.Operation{
			read(1, 0, 5, "a", 1, "PENDING"), sub(0, 6, 10, "a", 1)}, false},
		{"not found after it was acknowledged", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), read(1, 11, 12, "a", 1, "")}, false},
		{"a retried request answered with another job", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), sub(0, 11, 20, "a", 2)}, false},
		{"a retried request answered with the same job", []porcupine.Operation{
			subLost(0, 0, "a"), sub(0, 11, 20, "a", 1), read(1, 21, 22, "a", 1, "PENDING")}, true},
		{"a lost submit that did happen", []porcupine.Operation{
			subLost(0, 0, "a"), read(1, 5, 6, "a", 7, "RUNNING")}, true},
		{"cancelled after it completed", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), read(1, 11, 12, "a", 1, "COMPLETED"), cancel(0, 13, 14, "a", 1, true)}, false},
		{"cancelled, then read running", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), cancel(0, 11, 12, "a", 1, true), read(1, 13, 14, "a", 1, "RUNNING")}, false},
		{"cancelled with no cancel at all", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), read(1, 11, 12, "a", 1, "CANCELLED")}, false},
		{"cancelled by a cancel whose answer was lost", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), cancelLost(0, 11, "a", 1), read(1, 20, 21, "a", 1, "CANCELLED")}, true},
		{"a restart: running, then configuring in its next attempt", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), readAt(1, 11, 12, "a", 1, "RUNNING", 0), readAt(1, 13, 14, "a", 1, "CONFIGURING", 1)}, true},
		{"configuring again in the same attempt", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), readAt(1, 11, 12, "a", 1, "RUNNING", 1), readAt(1, 13, 14, "a", 1, "CONFIGURING", 1)}, false},
		{"a stale read of an earlier attempt", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), readAt(1, 11, 12, "a", 1, "PENDING", 1), readAt(1, 13, 14, "a", 1, "RUNNING", 0)}, false},
		{"lost with its node, then in its next attempt", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), readAt(1, 11, 12, "a", 1, "NODE_FAIL", 0), readAt(1, 13, 14, "a", 1, "PENDING", 1)}, true},
		{"lost with its node, cancelled before its restart", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), readAt(1, 11, 12, "a", 1, "NODE_FAIL", 0), cancel(0, 13, 14, "a", 1, true),
			readAt(1, 15, 16, "a", 1, "CANCELLED", 0)}, true},
		{"completed, then in a next attempt", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), readAt(1, 11, 12, "a", 1, "COMPLETED", 0), readAt(1, 13, 14, "a", 1, "PENDING", 1)}, false},
		{"cancelled, then in a next attempt", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), cancel(0, 11, 12, "a", 1, true), readAt(1, 13, 14, "a", 1, "PENDING", 1)}, false},
		{"requests are independent", []porcupine.Operation{
			sub(0, 0, 10, "a", 1), sub(1, 0, 10, "b", 2), read(0, 11, 12, "b", 2, "RUNNING"), read(1, 11, 12, "a", 1, "PENDING")}, true},
	} {
		if got := porcupine.CheckOperations(jobTableModel, tc.history); got != tc.ok {
			t.Errorf("%s: linearizable = %v; want %v", tc.name, got, tc.ok)
		}
	}
}
