package containerd

import (
	"bufio"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// capSysResource is the bit of CAP_SYS_RESOURCE in a capability mask.
const capSysResource = 24

// clampRlimits lowers the configured limits to the agent's own hard limits
// when the agent cannot raise them (it lacks CAP_SYS_RESOURCE, as inside
// some sandboxes): runc would fail to create every container otherwise.
func clampRlimits(cfg SpecConfig, log *slog.Logger) SpecConfig {
	mask, err := effectiveCaps("/proc/self/status")
	if err != nil || mask&(1<<capSysResource) != 0 {
		return cfg
	}
	cfg.Memlock = clamp("RLIMIT_MEMLOCK", unix.RLIMIT_MEMLOCK, cfg.Memlock, log)
	cfg.Nofile = clamp("RLIMIT_NOFILE", unix.RLIMIT_NOFILE, cfg.Nofile, log)
	return cfg
}

func clamp(name string, resource int, want uint64, log *slog.Logger) uint64 {
	var own syscall.Rlimit
	if err := syscall.Getrlimit(resource, &own); err != nil || want <= own.Max {
		return want
	}
	log.Warn("without CAP_SYS_RESOURCE containers get the agent's own limit",
		"limit", name, "wanted", want, "got", own.Max)
	return own.Max
}

// effectiveCaps reads the CapEff mask from a /proc/<pid>/status file.
func effectiveCaps(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, syscall.ENOENT
}
