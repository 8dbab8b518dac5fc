package cluster

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses a Slurm time limit: "M", "M:S", "H:M:S", "D-H",
// "D-H:M" or "D-H:M:S". "UNLIMITED" and "INFINITE" give zero, which means
// no limit. Seconds round up to a whole minute, as Slurm does.
func ParseDuration(s string) (time.Duration, error) {
	orig := s
	s = strings.TrimSpace(s)
	switch strings.ToUpper(s) {
	case "UNLIMITED", "INFINITE", "-1":
		return 0, nil
	case "":
		return 0, fmt.Errorf("empty time limit: use M, M:S, H:M:S, D-H, D-H:M or D-H:M:S")
	}
	bad := func() (time.Duration, error) {
		return 0, fmt.Errorf("invalid time limit %q: use M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (e.g. 30, 4:00:00, 1-12:00:00)", orig)
	}
	var days int64
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := parseField(d)
		if err != nil {
			return bad()
		}
		days, s = n, rest
		parts := strings.Split(s, ":")
		if len(parts) > 3 {
			return bad()
		}
		var hms [3]int64 // D-H, D-H:M, D-H:M:S
		for i, p := range parts {
			n, err := parseField(p)
			if err != nil {
				return bad()
			}
			hms[i] = n
		}
		return roundUpMinute(days*24*3600 + hms[0]*3600 + hms[1]*60 + hms[2]), nil
	}
	parts := strings.Split(s, ":")
	var secs int64
	switch len(parts) {
	case 1: // M
		m, err := parseField(parts[0])
		if err != nil {
			return bad()
		}
		secs = m * 60
	case 2: // M:S
		m, err1 := parseField(parts[0])
		sec, err2 := parseField(parts[1])
		if err1 != nil || err2 != nil {
			return bad()
		}
		secs = m*60 + sec
	case 3: // H:M:S
		h, err1 := parseField(parts[0])
		m, err2 := parseField(parts[1])
		sec, err3 := parseField(parts[2])
		if err1 != nil || err2 != nil || err3 != nil {
			return bad()
		}
		secs = h*3600 + m*60 + sec
	default:
		return bad()
	}
	return roundUpMinute(secs), nil
}

func parseField(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty field")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not a number")
		}
	}
	return strconv.ParseInt(s, 10, 64)
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
