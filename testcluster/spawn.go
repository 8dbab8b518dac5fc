package testcluster

import (
	"os/exec"
	goruntime "runtime"
	"sync"
)

// Pdeathsig, which kills a cluster's processes should the test binary
// die, is sent when the OS thread that forked the child exits, not the
// process. The Go runtime ends a thread whose goroutine exits while locked
// to it, as runtime.AsUser's do in the agents this binary runs (a task's
// output file is created as its user): a controller forked from such a
// thread was killed in the middle of a test, silently, as the agent
// started a job. So every process with a Pdeathsig is forked from one
// thread that never exits.

var (
	spawnOnce sync.Once
	spawns    chan spawn
)

type spawn struct {
	cmd  *exec.Cmd
	done chan error
}

// startProcess starts cmd from the spawner thread.
func startProcess(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawns = make(chan spawn)
		go func() {
			goruntime.LockOSThread() // never unlocked, and the goroutine never returns
			for s := range spawns {
				s.done <- s.cmd.Start()
			}
		}()
	})
	s := spawn{cmd: cmd, done: make(chan error, 1)}
	spawns <- s
	return <-s.done
}
