package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCheckBeginDeadline(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var zero time.Time
	for _, tc := range []struct {
		begin, deadline, now time.Time
		want                 string // "" for none
	}{
		{zero, zero, now, ""},
		{now.Add(time.Hour), zero, now, ""},
		{zero, now.Add(time.Hour), now, ""},
		{now.Add(time.Hour), now.Add(2 * time.Hour), now, ""},
		{now.Add(2 * time.Hour), now.Add(time.Hour), now, "Incompatible begin and deadline time specification"},
		{zero, now.Add(-time.Hour), now, "Requested time limit is invalid"},
		{zero, now.Add(-time.Hour), zero, ""}, // no clock: only the order is checked
	} {
		err := CheckBeginDeadline(tc.begin, tc.deadline, tc.now)
		if (tc.want == "") != (err == nil) || err != nil && (!strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, ErrInvalid)) {
			t.Errorf("begin %v deadline %v now %v: %v; want %q", tc.begin, tc.deadline, tc.now, err, tc.want)
		}
	}
}
