package sbatch

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
	"golang.org/x/sys/unix"
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
	q, err := cluster.ParseQoS(v)
	if err != nil || v == "" {
		return "", fmt.Errorf("invalid qos specification: use high, normal or low")
	}
	return string(q), nil
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

// parseSignal reads --signal=[{R|B}:]SIG[@SECONDS]: SIG a number or a
// name (USR1, SIGUSR1), SECONDS before the time limit (default 60, at
// most 65535), B: for the batch script alone. R: (a reservation's end) is
// refused: Phalanx has no reservations.
func parseSignal(v string) (sig, seconds int32, batch bool, err error) {
	spec := v
	if flag, rest, ok := strings.Cut(spec, ":"); ok {
		switch strings.ToUpper(flag) {
		case "B":
			batch = true
		case "R":
			return 0, 0, false, fmt.Errorf("R: (a reservation's end) is not supported: Phalanx has no reservations")
		default:
			return 0, 0, false, fmt.Errorf("want [B:]SIG[@SECONDS], e.g. B:USR1@90")
		}
		spec = rest
	}
	name, when, hasTime := strings.Cut(spec, "@")
	seconds = int32(cluster.DefaultSignalTime / time.Second)
	if hasTime {
		n, perr := strconv.ParseInt(when, 10, 32)
		if perr != nil || n < 0 || n > 65535 {
			return 0, 0, false, fmt.Errorf("@%s: give 0 to 65535 seconds", when)
		}
		seconds = int32(n)
	}
	n, err := SignalNumber(name)
	if err != nil {
		return 0, 0, false, err
	}
	return int32(n), seconds, batch, nil
}

// SignalNumber reads a signal as Slurm's commands take it: a number from 1
// to cluster.MaxSignal, or a name with or without SIG, in any case (USR1,
// SIGUSR1, term).
func SignalNumber(name string) (int, error) {
	if n, err := strconv.Atoi(name); err == nil {
		if n < 1 || n > cluster.MaxSignal {
			return 0, fmt.Errorf("signal %d: give 1 to %d, or a name such as USR1", n, cluster.MaxSignal)
		}
		return n, nil
	}
	upper := strings.ToUpper(name)
	if !strings.HasPrefix(upper, "SIG") {
		upper = "SIG" + upper
	}
	n := unix.SignalNum(upper)
	if n == 0 {
		return 0, fmt.Errorf("%s is not a signal: give a number or a name such as USR1", name)
	}
	return int(n), nil
}
