package config

import (
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Fair share's keys (Slurm's priority/multifactor): how much it weighs in
// a job's priority, and how fast past usage fades.
const (
	DefaultPriorityWeightFairshare = 10000
	// MaxPriorityWeightFairshare keeps fair share below one QoS step of
	// the priority score (1,000,000): QoS stays a class.
	MaxPriorityWeightFairshare = 999999
)

// priority handles PriorityWeightFairshare=N and
// PriorityDecayHalfLife=TIME.
func (p *parser) priority(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	switch kv.lower {
	case "priorityweightfairshare":
		n, err := strconv.ParseInt(kv.Value, 10, 64)
		if err != nil || n < 0 || n > MaxPriorityWeightFairshare {
			p.errorf(file, num, "%s=%s: want a whole number from 0 (no fair share) to %d, e.g. %s=%d",
				kv.Key, kv.Value, MaxPriorityWeightFairshare, kv.Key, DefaultPriorityWeightFairshare)
			return
		}
		p.cfg.PriorityWeightFairshare = n
	case "prioritydecayhalflife":
		d, err := cluster.ParseDuration(kv.Value)
		if err != nil || unlimited(kv.Value) {
			p.errorf(file, num, "%s=%s: want a time as Slurm writes one, days-hours or minutes, e.g. %s=7-0 (0: usage never fades)", kv.Key, kv.Value, kv.Key)
			return
		}
		p.cfg.PriorityDecayHalfLife = d
	}
}

// unlimited reports whether v is one of Slurm's spellings of no limit,
// which ParseDuration reads as 0 (in any case, as it reads them): not a
// half-life.
func unlimited(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "UNLIMITED", "INFINITE", "-1":
		return true
	}
	return false
}
