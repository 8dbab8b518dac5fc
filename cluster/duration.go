package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxTimeLimit is the longest time limit Phalanx accepts: 36,500 days (100
// years). Slurm keeps limits as 32-bit minutes (about 8,000 years) with
// INFINITE for none; Phalanx keeps them as time.Duration, and a limit of at
// most 100 years keeps every end time (start + limit) inside the years that
// time.Time.UnixNano can count (up to 2262). Longer limits are an error,
// never a silently wrapped value: ask for UNLIMITED instead.
const MaxTimeLimit = 36500 * 24 * time.Hour

// maxLimitSeconds is MaxTimeLimit in seconds.
const maxLimitSeconds = int64(MaxTimeLimit / time.Second)

// ParseDuration parses a Slurm time limit: "M", "M:S", "H:M:S", "D-H",
// "D-H:M" or "D-H:M:S". "UNLIMITED" and "INFINITE" give zero, which means
// no limit. Seconds round up to a whole minute, as Slurm does. A limit
// longer than MaxTimeLimit is an error.
func ParseDuration(s string) (time.Duration, error) {
	secs, err := parseSlurmTime(s)
	return roundUpMinute(secs), err
}

// ParseDurationSeconds is ParseDuration without the rounding, for the
// times Phalanx counts in seconds (--hang-timeout: a dev cluster's minimum
// is 10 s).
func ParseDurationSeconds(s string) (time.Duration, error) {
	secs, err := parseSlurmTime(s)
	return time.Duration(secs) * time.Second, err
}

// parseSlurmTime is ParseDuration's grammar, in whole seconds.
func parseSlurmTime(s string) (int64, error) {
	orig := s
	s = strings.TrimSpace(s)
	switch strings.ToUpper(s) {
	case "UNLIMITED", "INFINITE", "-1":
		return 0, nil
	case "":
		return 0, fmt.Errorf("empty time limit: use M, M:S, H:M:S, D-H, D-H:M or D-H:M:S")
	}
	days, rest, hasDays := strings.Cut(s, "-")
	if !hasDays {
		days, rest = "0", s
	}
	parts := strings.Split(rest, ":")
	// Which unit each field is in, by form: M, M:S, H:M:S; D-H, D-H:M, D-H:M:S.
	units := [][]int64{{60}, {60, 1}, {3600, 60, 1}}
	if hasDays {
		units = [][]int64{{3600}, {3600, 60}, {3600, 60, 1}}
	}
	if len(parts) > len(units) {
		return 0, badLimit(orig)
	}
	secs, err := limitSeconds(append([]string{days}, parts...), append([]int64{86400}, units[len(parts)-1]...))
	if err != nil {
		return 0, limitErr(orig, err)
	}
	return secs, nil
}

// errTooLong marks a limit over MaxTimeLimit.
var errTooLong = errors.New("too long")

func badLimit(orig string) error {
	return fmt.Errorf("invalid time limit %q: use M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (e.g. 30, 4:00:00, 1-12:00:00)", orig)
}

func limitErr(orig string, err error) error {
	if err == errTooLong {
		return fmt.Errorf("time limit %q is longer than %d days: ask for less, or for UNLIMITED", orig, MaxTimeLimit/(24*time.Hour))
	}
	return badLimit(orig)
}

// limitSeconds adds up fields, each a count of its unit in seconds, failing
// with errTooLong past MaxTimeLimit (rounded up to a minute) rather than
// overflowing.
func limitSeconds(fields []string, units []int64) (int64, error) {
	var secs int64
	for i, f := range fields {
		n, err := parseField(f)
		if err != nil {
			return 0, err
		}
		if n > maxLimitSeconds/units[i] {
			return 0, errTooLong
		}
		if secs += n * units[i]; secs > maxLimitSeconds {
			return 0, errTooLong
		}
	}
	return secs, nil
}

// parseField reads a field of digits; one too large for int64 is too long.
func parseField(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty field")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not a number")
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errTooLong // only digits: out of range
	}
	return n, nil
}

func roundUpMinute(secs int64) time.Duration {
	if r := secs % 60; r != 0 {
		secs += 60 - r
	}
	return time.Duration(secs) * time.Second
}

// FormatDuration prints a duration as squeue and scontrol do: "M:SS",
// "H:MM:SS" or "D-HH:MM:SS". Zero prints as "0:00".
func FormatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	secs := int64(d / time.Second)
	days, secs := secs/86400, secs%86400
	h, secs := secs/3600, secs%3600
	m, s := secs/60, secs%60
	switch {
	case days > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, s)
	case h > 0:
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// FormatLimit prints a time limit; zero is "UNLIMITED".
func FormatLimit(d time.Duration) string {
	if d == 0 {
		return "UNLIMITED"
	}
	return FormatDuration(d)
}
