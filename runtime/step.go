package runtime

import (
	"bytes"
	"os"
	"strconv"
)

// InStep reports whether process pid belongs to step step of its job: the
// environment it was started with says SLURM_STEP_ID=step, as srun sets
// it for the step's tasks (and what they start inherits). srun itself, a
// shell the batch script forked, was started without it. A process that
// is gone, or whose environment cannot be read, is in no step.
func InStep(pid int, step uint32) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte("SLURM_STEP_ID=" + strconv.FormatUint(uint64(step), 10))
	for _, kv := range bytes.Split(env, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}
