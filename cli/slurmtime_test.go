package cli

import (
	"testing"
	"time"
)

// A time of day without a day is its last occurrence for what looks back
// (sacct, events) and its next for what looks ahead (sbatch --begin,
// --deadline), as Slurm's parse_time with and without its past flag;
// today and tomorrow name days.
func TestTimeOfDayDirection(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) // noon
	for _, tc := range []struct{ in, back, ahead string }{
		{"14:30", "2024-04-30T14:30:00", "2024-05-01T14:30:00"},
		{"9:05", "2024-05-01T09:05:00", "2024-05-02T09:05:00"},
		{"midnight", "2024-05-01T00:00:00", "2024-05-02T00:00:00"},
		{"noon", "2024-05-01T12:00:00", "2024-05-02T12:00:00"},
		{"teatime", "2024-04-30T16:00:00", "2024-05-01T16:00:00"},
		{"1:15pm", "2024-04-30T13:15:00", "2024-05-01T13:15:00"},
		{"today", "2024-05-01T00:00:00", "2024-05-01T00:00:00"},
		{"tomorrow", "2024-05-02T00:00:00", "2024-05-02T00:00:00"},
		{"2024-05-01T09:00", "2024-05-01T09:00:00", "2024-05-01T09:00:00"}, // a day given: as written
		{"now+1hour", "2024-05-01T13:00:00", "2024-05-01T13:00:00"},
	} {
		back, err1 := parseSlurmTime(tc.in, now, time.UTC)
		ahead, err2 := parseBeginTime(tc.in, now, time.UTC)
		if err1 != nil || err2 != nil || back.Format(timeLayout) != tc.back || ahead.Format(timeLayout) != tc.ahead {
			t.Errorf("%q: back %s (%v), ahead %s (%v); want %s, %s", tc.in, back.Format(timeLayout), err1, ahead.Format(timeLayout), err2, tc.back, tc.ahead)
		}
	}
}
