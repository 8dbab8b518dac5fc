package sbatch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// Parsers for the placement and ordering options: --nodelist, --exclude,
// --exclusive, --switches, --qos and --nice.

// hosts expands a hostlist expression (gpu[001-004,010],cpu1).
func hosts(v string) ([]string, error) {
	names, err := hostlist.Expand(v)
	if err != nil {
		return nil, fmt.Errorf("%v: write a hostlist such as gpu[001-004],gpu010", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no nodes given: write a hostlist such as gpu[001-004]")
	}
	return names, nil
}

// exclusive accepts --exclusive alone: whole nodes. Slurm's =user, =mcs
// and =topo sharing modes are not supported.
func exclusive(v string) error {
	if v != "" {
		return fmt.Errorf("only --exclusive (whole nodes, no other job) is supported")
	}
	return nil
}

// defaultNice is what --nice without a value adds, as in Slurm.
const defaultNice = 100

func parseNice(v string) (int32, error) {
	if v == "" {
		return defaultNice, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("want an integer adjustment, e.g. --nice=100")
	}
	return int32(n), nil
}

// parseQoS accepts high, normal and low, in any case.
func parseQoS(v string) (string, error) {
	switch q := strings.ToLower(v); q {
	case "high", "normal", "low":
		return q, nil
	}
	return "", fmt.Errorf("invalid qos specification: use high, normal or low")
}

// parseSwitches reads N or N@TIME, TIME in Slurm's time format.
func parseSwitches(v string) (int32, int64, error) {
	count, wait, hasWait := strings.Cut(v, "@")
	n, err := strconv.ParseInt(count, 10, 32)
	if err != nil || n < 0 {
		return 0, 0, fmt.Errorf("want N[@TIME] with N >= 0 leaf switches, e.g. 1@30:00")
	}
	if !hasWait {
		return int32(n), 0, nil
	}
	d, err := cluster.ParseDuration(wait)
	if err != nil {
		return 0, 0, fmt.Errorf("wait time: %w", err)
	}
	return int32(n), int64(d.Seconds()), nil
}
