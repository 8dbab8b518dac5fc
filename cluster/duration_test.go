package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30":         30 * time.Minute,
		"5:30":       6 * time.Minute, // seconds round up to the minute
		"5:00":       5 * time.Minute,
		"2:00:00":    2 * time.Hour,
		"1-12":       36 * time.Hour,
		"1-12:30":    36*time.Hour + 30*time.Minute,
		"1-12:30:00": 36*time.Hour + 30*time.Minute,
		"UNLIMITED":  0,
	} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "1:2:3:4", "-5", "1-", "1-2:3:4:5", "1h"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) succeeded; want an error", in)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                          "0:00",
		59 * time.Second:           "0:59",
		61 * time.Minute:           "1:01:00",
		36*time.Hour + time.Second: "1-12:00:01",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q; want %q", d, got, want)
		}
	}
}

// TestParseDurationTooLong is the regression test for limits that
// overflowed into a wrong (even negative) duration: --time=999999999 (minutes)
// and --time=99999999-00:00:00 were accepted as about 147 years and as a
// negative limit.
func TestParseDurationTooLong(t *testing.T) {
	for _, in := range []string{"999999999", "99999999-00:00:00", "36500-00:00:01", "52560001",
		"0-876000:00:01", "99999999999999999999", "00000000200000000", "1-99999999999999999:00"} {
		d, err := ParseDuration(in)
		if err == nil || d != 0 || !strings.Contains(err.Error(), "longer than 36500 days") {
			t.Errorf("ParseDuration(%q) = %v, %v; want an error saying it is longer than 36500 days", in, d, err)
		}
	}
	for in, want := range map[string]time.Duration{
		"36500-00:00:00": MaxTimeLimit,
		"52560000":       MaxTimeLimit, // minutes
		"0-876000":       MaxTimeLimit, // hours
		"INFINITE":       0,
	} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
