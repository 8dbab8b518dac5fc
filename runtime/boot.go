package runtime

import (
	"os"
	"strings"
	"sync"
)

// bootIDPath holds the kernel's random ID of the current boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// BootID identifies the current boot; "unknown" when the kernel does not
// say, which matches only records written under the same lack. A process
// ID recorded under another boot names nothing of the task's any more.
func BootID() string { return bootID() }

// bootID reads the boot ID once per process: a process does not outlive
// the boot it started in.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile(bootIDPath)
	if id := strings.TrimSpace(string(b)); err == nil && id != "" {
		return id
	}
	return "unknown"
})
