package cluster

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// HealthCheck is how agents run the administrator's node health program,
// with Slurm's keys: HealthCheckProgram, HealthCheckInterval and
// HealthCheckNodeState. The controller reads them from its config and
// hands them to every agent with each heartbeat's reply.
type HealthCheck struct {
	Program  string        // absolute path; empty: none
	Interval time.Duration // between runs on a node; zero: never run
	States   HealthCheckStates
}

// HealthCheckTimeout is how long one run of the health program may take;
// a run that takes longer is killed and fails the node's check.
const HealthCheckTimeout = 60 * time.Second

// Enabled says whether the program runs at all.
func (h HealthCheck) Enabled() bool { return h.Program != "" && h.Interval > 0 }

// Validate says what is wrong with h.
func (h HealthCheck) Validate() error {
	switch {
	case h.Program != "" && !filepath.IsAbs(h.Program):
		return Errorf(ErrInvalid, "HealthCheckProgram=%s: give an absolute path", h.Program)
	case strings.ContainsAny(h.Program, "\n\r\x00"):
		return Errorf(ErrInvalid, "HealthCheckProgram: one line, no NUL")
	case h.Interval < 0:
		return Errorf(ErrInvalid, "HealthCheckInterval %v: give zero or more seconds", h.Interval)
	}
	return nil
}

// HealthCheckStates are the node states the health program runs in (a
// set: HealthCheckNodeState=IDLE,MIXED).
type HealthCheckStates uint8

// The states of HealthCheckNodeState, as Slurm names them.
const (
	// HealthCheckIdle: nodes that run no job.
	HealthCheckIdle HealthCheckStates = 1 << iota
	// HealthCheckAlloc: nodes that run jobs.
	HealthCheckAlloc
	// HealthCheckMixed: nodes that run jobs (Slurm: partly allocated
	// nodes; agents do not tell them from full ones).
	HealthCheckMixed
	// HealthCheckNonDrainedIdle: idle nodes that are not drained.
	HealthCheckNonDrainedIdle
	// HealthCheckCycle: spread the runs over the interval rather than
	// starting them together. Phalanx always spreads them (each agent
	// starts at a random point of the interval); CYCLE is accepted.
	HealthCheckCycle

	// HealthCheckAny runs the program whatever the node does: the default.
	HealthCheckAny = HealthCheckIdle | HealthCheckAlloc | HealthCheckMixed
)

var healthCheckStateNames = []struct {
	name  string
	state HealthCheckStates
}{
	{"ANY", HealthCheckAny},
	{"IDLE", HealthCheckIdle},
	{"ALLOC", HealthCheckAlloc},
	{"MIXED", HealthCheckMixed},
	{"NONDRAINED_IDLE", HealthCheckNonDrainedIdle},
	{"CYCLE", HealthCheckCycle},
}

// ParseHealthCheckStates reads HealthCheckNodeState's value: names
// separated by commas, any case. Empty is ANY.
func ParseHealthCheckStates(s string) (HealthCheckStates, error) {
	if strings.TrimSpace(s) == "" {
		return HealthCheckAny, nil
	}
	var out HealthCheckStates
	for _, part := range strings.Split(s, ",") {
		name := strings.ToUpper(strings.TrimSpace(part))
		found := false
		for _, n := range healthCheckStateNames {
			if n.name == name {
				out |= n.state
				found = true
			}
		}
		if !found {
			return 0, Errorf(ErrInvalid, "HealthCheckNodeState: %q: use ANY, IDLE, ALLOC, MIXED, NONDRAINED_IDLE or CYCLE, separated by commas", part)
		}
	}
	if out&^HealthCheckCycle == 0 { // CYCLE alone: in every state
		out |= HealthCheckAny
	}
	return out, nil
}

// String writes s as HealthCheckNodeState does.
func (s HealthCheckStates) String() string {
	var names []string
	rest := s
	for _, n := range healthCheckStateNames {
		if rest&n.state == n.state && n.state != 0 {
			names = append(names, n.name)
			rest &^= n.state
		}
	}
	if rest != 0 {
		names = append(names, fmt.Sprintf("0x%x", uint8(rest)))
	}
	return strings.Join(names, ",")
}

// RunsIn says whether the program runs on a node that runs jobs (busy)
// or not, drained or not.
func (s HealthCheckStates) RunsIn(busy, drained bool) bool {
	if busy {
		return s&(HealthCheckAlloc|HealthCheckMixed) != 0
	}
	return s&HealthCheckIdle != 0 || s&HealthCheckNonDrainedIdle != 0 && !drained
}
