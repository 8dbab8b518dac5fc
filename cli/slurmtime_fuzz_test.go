package cli

import (
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"
)

// FuzzParseSlurmTime checks sacct's time formats: a time or an error, never
// both; now±COUNT is exactly that far from now, or an error when it is out
// of range; any time that parses reads back the same from its
// YYYY-MM-DDTHH:MM:SS form.
func FuzzParseSlurmTime(f *testing.F) {
	for _, s := range []string{
		"2024-04-30", "2024-04-30T13:45", "2014-07-03-11:40", "14:30", "1:15PM", "04/30/23-10:00", "4.30.23",
		"043023-08:00:01", "now", "now-1hours", "now+30", "NOW-2days", "now-90minutes", "teatime",
		"now+9999999999999weeks", "now-99999999999999999999", "2024-02-30", "25:00", "",
	} {
		f.Add(s)
	}
	rel := regexp.MustCompile(`^now([+-])(\d+)(seconds?|minutes?|hours?|days?|weeks?)?$`)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSlurmTime(s, testNow, time.UTC)
		if err != nil {
			if !got.IsZero() || strings.Contains(err.Error(), "\n") {
				t.Fatalf("parseSlurmTime(%q) = %v and error %q", s, got, err)
			}
			return
		}
		if m := rel.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s))); m != nil {
			checkRelative(t, s, got, m)
		}
		back, err := parseSlurmTime(got.Format("2006-01-02T15:04:05"), testNow, time.UTC)
		if err != nil || !back.Equal(got) {
			t.Fatalf("parseSlurmTime(%q) = %v; read back from %q: %v, %v", s, got, got.Format("2006-01-02T15:04:05"), back, err)
		}
	})
}

// checkRelative checks a now±COUNT[unit] result with exact arithmetic.
func checkRelative(t *testing.T, s string, got time.Time, m []string) {
	t.Helper()
	unit := map[string]int64{"": 1, "second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}[strings.TrimSuffix(m[3], "s")]
	n, _ := new(big.Int).SetString(m[2], 10)
	secs := n.Mul(n, big.NewInt(unit))
	if m[1] == "-" {
		secs.Neg(secs)
	}
	want := new(big.Int).Add(big.NewInt(testNow.Unix()), secs)
	if want.Cmp(big.NewInt(got.Unix())) != 0 || got.Nanosecond() != 0 {
		t.Fatalf("parseSlurmTime(%q) = %v (%d); want %v seconds since 1970", s, got, got.Unix(), want)
	}
}
