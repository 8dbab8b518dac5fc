// Command phalanx-shim supervises one plain-process task of phalanx-agent
// (package runtime/process): the agent starts it, one per task, as
// "phalanx-shim <task ID>" with the task's spec and outputs on descriptors
// 3 to 6, in a session of its own. It starts the task, records it, waits for
// its process group to end, records how it ended, and kills the group if
// the agent's lease ends; it outlives the agent.
//
// It links runtime/process and little else (layering_test.go keeps it so):
// a task starts and is waited for in less than half the time, and its
// supervisor holds about 3 MiB for the task's lifetime, where phalanx-agent
// itself (gRPC, containerd's client, NVML) would hold about 18
// (BenchmarkStartWait in runtime/process). The agent runs its own
// executable as the supervisor when no phalanx-shim is installed beside it.
package main

import (
	"fmt"
	"os"

	"github.com/phalanx-hpc/phalanx/runtime/process"
)

func main() {
	if len(os.Args) == 2 {
		process.RunShimIfAsked() // exits when argv[0] is phalanx-shim
	}
	fmt.Fprintf(os.Stderr, "%s: phalanx-agent starts it, one per plain-process task, as `%s TASK-ID` with the task on descriptors 3-6; it is not run by hand\n",
		process.ShimName, process.ShimName)
	os.Exit(2)
}
