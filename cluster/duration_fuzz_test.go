package cluster

import (
	"testing"
	"time"
)

// FuzzParseDuration checks Slurm time limits: a limit that parses is whole
// minutes, not negative, at most MaxTimeLimit, and reads back the same from
// FormatLimit's text; the same input always gives the same answer.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{
		"30", "5:30", "2:00:00", "1-12", "1-12:30", "1-12:30:00", "UNLIMITED", "infinite", "-1",
		"0", "999999999", "99999999-00:00:00", "36500-00:00:00", "36500-00:00:01", "1:2:3:4", " 30 ", "1-", "00000000000000000000001",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if d != 0 {
				t.Fatalf("ParseDuration(%q) = %v and error %v: want one or the other", s, d, err)
			}
			return
		}
		if d < 0 || d%time.Minute != 0 {
			t.Fatalf("ParseDuration(%q) = %v: want whole, non-negative minutes", s, d)
		}
		back, err := ParseDuration(FormatLimit(d))
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v, formatted %q, read back as %v, %v", s, d, FormatLimit(d), back, err)
		}
	})
}
