package cli

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// slurmTimeForms are Slurm's absolute time formats (lower-cased) and where
// the year, month, day, hour, minute and second are among a match's
// groups (0: not given: this year, today, 0).
// They are compiled on first use, not at every phx start.
var slurmTimeForms = sync.OnceValue(func() []slurmTimeForm {
	return []slurmTimeForm{
		{regexp.MustCompile(`^(\d{4})-(\d{1,2})-(\d{1,2})(?:[t-](\d{1,2}):(\d{2})(?::(\d{2}))?)?$`), [6]int{1, 2, 3, 4, 5, 6}},
		{regexp.MustCompile(`^(\d{1,2})[/.](\d{1,2})(?:[/.](\d{2}))?(?:-(\d{1,2}):(\d{2})(?::(\d{2}))?)?$`), [6]int{3, 1, 2, 4, 5, 6}},
		{regexp.MustCompile(`^(\d{2})(\d{2})(\d{2})?(?:-(\d{1,2}):(\d{2})(?::(\d{2}))?)?$`), [6]int{3, 1, 2, 4, 5, 6}},
		{regexp.MustCompile(`^(\d{1,2}):(\d{2})(?::(\d{2}))?(am|pm)?$`), [6]int{0, 0, 0, 1, 2, 3}},
	}
})

type slurmTimeForm struct {
	re    *regexp.Regexp
	group [6]int
}

var nowTimeRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^now(?:([+-])(\d+)(seconds?|minutes?|hours?|days?|weeks?)?)?$`)
})

var (
	timeUnits  = map[string]time.Duration{"": time.Second, "second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour}
	namedTimes = map[string]int{"midnight": 0, "elevenses": 11, "noon": 12, "fika": 15, "teatime": 16}
	namedDays  = map[string]int{"today": 0, "tomorrow": 1}
)

// errSlurmTime says what a time may look like.
var errSlurmTime = errors.New("use YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY][-HH:MM[:SS]], MMDD[YY][-HH:MM[:SS]], HH:MM[:SS][AM|PM], today, tomorrow, midnight, noon, fika, teatime or now[{+|-}COUNT{seconds|minutes|hours|days|weeks}]")

// parseSlurmTime reads a time that looks back (sacct -S/-E, events
// --since), as Slurm's parse_time with past set: a time of day without a
// day (HH:MM, noon, midnight) is its last occurrence, today's or, when
// that is still to come, yesterday's.
func parseSlurmTime(s string, now time.Time, loc *time.Location) (time.Time, error) {
	return parseTimeToward(s, now, loc, -1)
}

// parseBeginTime reads a time that looks ahead (sbatch --begin,
// --deadline), as Slurm's parse_time: a time of day without a day is its
// next occurrence, today's or, when that has passed, tomorrow's.
func parseBeginTime(s string, now time.Time, loc *time.Location) (time.Time, error) {
	return parseTimeToward(s, now, loc, +1)
}

// parseTimeToward reads a time as Slurm's commands take it, in loc; a day
// without a year is in now's year; a time of day without a day is moved a
// day toward dir (-1 back, +1 ahead) when today's is on the wrong side of
// now.
func parseTimeToward(s string, now time.Time, loc *time.Location, dir int) (time.Time, error) {
	t, timeOnly, err := parseTime(s, now, loc)
	switch {
	case err != nil || !timeOnly:
	case dir < 0 && t.After(now):
		t = t.AddDate(0, 0, -1)
	case dir > 0 && !t.After(now):
		t = t.AddDate(0, 0, 1)
	}
	return t, err
}

// parseTime reads a time; timeOnly says it named a time of day alone.
func parseTime(s string, now time.Time, loc *time.Location) (t time.Time, timeOnly bool, err error) {
	low := strings.ToLower(strings.TrimSpace(s))
	now = now.In(loc)
	y, mo, d := now.Date()
	if h, ok := namedTimes[low]; ok {
		return time.Date(y, mo, d, h, 0, 0, 0, loc), true, nil
	}
	if days, ok := namedDays[low]; ok {
		return time.Date(y, mo, d+days, 0, 0, 0, 0, loc), false, nil
	}
	if m := nowTimeRe().FindStringSubmatch(low); m != nil {
		t, err := nowPlus(s, now, m[1], m[2], timeUnits[strings.TrimSuffix(m[3], "s")])
		return t, false, err
	}
	for _, f := range slurmTimeForms() {
		if m := f.re.FindStringSubmatch(low); m != nil {
			v := [6]int{y, int(mo), d}
			for i, g := range f.group {
				if g > 0 && m[g] != "" {
					v[i], _ = strconv.Atoi(m[g])
				}
			}
			t, err := slurmDate(s, v, m[len(m)-1], loc)
			return t, f.group[2] == 0, err // no day group: a time of day alone
		}
	}
	return time.Time{}, false, fmt.Errorf("invalid time %q: %w", s, errSlurmTime)
}

// nowPlus is now moved by count units forward (sign "+") or back; a move
// too large for a time.Duration (about 292 years) is an error, not a
// wrapped time.
func nowPlus(s string, now time.Time, sign, count string, unit time.Duration) (time.Time, error) {
	if count == "" {
		return now, nil
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || n > int64(math.MaxInt64/unit) {
		return time.Time{}, fmt.Errorf("invalid time %q: more than %d years from now", s, math.MaxInt64/int64(365*24*time.Hour))
	}
	delta := time.Duration(n) * unit
	if sign == "-" {
		delta = -delta
	}
	return now.Add(delta), nil
}

// slurmDate makes a time of year, month, day, hour, minute and second in
// loc (a two-digit year is this century's; ampm is "am", "pm" or other),
// refusing what no calendar or clock has.
func slurmDate(s string, v [6]int, ampm string, loc *time.Location) (time.Time, error) {
	if v[0] < 100 {
		v[0] += 2000
	}
	if ampm == "am" || ampm == "pm" {
		if v[3] < 1 || v[3] > 12 {
			return time.Time{}, fmt.Errorf("invalid time %q: %w", s, errSlurmTime)
		}
		v[3] %= 12
		if ampm == "pm" {
			v[3] += 12
		}
	}
	t := time.Date(v[0], time.Month(v[1]), v[2], v[3], v[4], v[5], 0, loc)
	if int(t.Month()) != v[1] || t.Day() != v[2] || v[3] > 23 || v[4] > 59 || v[5] > 59 {
		return time.Time{}, fmt.Errorf("invalid time %q: no such date or time of day (months run 1-12, days to the month's last, hours 0-23, minutes and seconds 0-59)", s)
	}
	return t, nil
}
