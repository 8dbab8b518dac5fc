package config

import (
	"strconv"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// healthCheck parses Slurm's HealthCheckProgram, HealthCheckInterval and
// HealthCheckNodeState into cfg.HealthCheck.
func (p *parser) healthCheck(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	h := &p.cfg.HealthCheck
	switch kv.lower {
	case "healthcheckprogram":
		h.Program = kv.Value
		if err := h.Validate(); err != nil {
			p.errorf(file, num, "%v", err)
		}
	case "healthcheckinterval":
		n, err := strconv.ParseInt(kv.Value, 10, 64)
		if err != nil || n < 0 || n > int64(maxDuration/time.Second) {
			p.errorf(file, num, "%s=%s: want whole seconds, e.g. %s=300 (0: the program never runs)", kv.Key, kv.Value, kv.Key)
			return
		}
		h.Interval = time.Duration(n) * time.Second
	case "healthchecknodestate":
		states, err := cluster.ParseHealthCheckStates(kv.Value)
		if err != nil {
			p.errorf(file, num, "%v", err)
			return
		}
		h.States = states
	}
}

// finishHealthCheck fills in the default node states, and warns about a
// program that never runs.
func (p *parser) finishHealthCheck() {
	h := &p.cfg.HealthCheck
	if h.States == 0 {
		h.States = cluster.HealthCheckAny
	}
	if h.Program != "" && h.Interval == 0 {
		p.cfg.Warnings = append(p.cfg.Warnings, p.globalLine["healthcheckprogram"]+
			": HealthCheckProgram is set but HealthCheckInterval is not (or 0): the program never runs; set HealthCheckInterval=SECONDS")
	}
}

// unkillable parses Slurm's UnkillableStepTimeout and UnkillableStepProgram
// into cfg.Unkillable.
func (p *parser) unkillable(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	u := &p.cfg.Unkillable
	switch kv.lower {
	case "unkillablesteptimeout":
		most := int64(cluster.MaxUnkillableTimeout / time.Second)
		n, err := strconv.ParseInt(kv.Value, 10, 64)
		if err != nil || n < 1 || n > most {
			p.errorf(file, num, "%s=%s: want whole seconds from 1 to %d, e.g. %s=120 (default %d)",
				kv.Key, kv.Value, most, kv.Key, int(cluster.DefaultUnkillableTimeout/time.Second))
			return
		}
		u.Timeout = time.Duration(n) * time.Second
	case "unkillablestepprogram":
		u.Program = kv.Value
		if err := u.Validate(); err != nil {
			p.errorf(file, num, "%v", err)
		}
	}
}

// maxKillWait is the longest KillWait Slurm takes.
const maxKillWait = 65533

// killWait parses Slurm's KillWait=SECONDS into cfg.KillWait.
func (p *parser) killWait(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	n, err := strconv.ParseInt(kv.Value, 10, 64)
	if err != nil || n < 1 || n > maxKillWait {
		p.errorf(file, num, "%s=%s: want whole seconds from 1 to %d, e.g. %s=30: the time between SIGTERM and SIGKILL", kv.Key, kv.Value, maxKillWait, kv.Key)
		return
	}
	p.cfg.KillWait = time.Duration(n) * time.Second
}
