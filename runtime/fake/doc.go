// Package fake is an in-memory runtime.Runtime for tests of the node agent
// and of anything above it.
//
// A fake task "runs" from Start until the test ends it with
// (*Runtime).Exit, or until it receives SIGKILL, or SIGTERM unless it was
// told to ignore SIGTERM; a task killed by a signal exits with 128+signal,
// as a shell reports it. Every Spec started and every signal received is
// recorded for the test to inspect. Nothing sleeps and nothing depends on
// timing: a test that needs to know a task has started blocks on
// (*Runtime).WaitStarted.
package fake
