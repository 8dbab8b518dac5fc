package cluster

import "testing"

func TestHealthCheckStates(t *testing.T) {
	for _, tc := range []struct {
		in, str                 string
		idle, busy, drainedIdle bool
	}{
		{"", "ANY", true, true, true},
		{"ANY", "ANY", true, true, true},
		{"idle", "IDLE", true, false, true},
		{"ALLOC", "ALLOC", false, true, false},
		{"MIXED", "MIXED", false, true, false},
		{"NONDRAINED_IDLE", "NONDRAINED_IDLE", true, false, false},
		{"CYCLE", "ANY,CYCLE", true, true, true},
		{"IDLE, CYCLE", "IDLE,CYCLE", true, false, true},
	} {
		s, err := ParseHealthCheckStates(tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if s.String() != tc.str || s.RunsIn(false, false) != tc.idle || s.RunsIn(true, false) != tc.busy || s.RunsIn(false, true) != tc.drainedIdle {
			t.Errorf("%q: %s, idle %v busy %v drained idle %v; want %s %v %v %v", tc.in, s, s.RunsIn(false, false), s.RunsIn(true, false),
				s.RunsIn(false, true), tc.str, tc.idle, tc.busy, tc.drainedIdle)
		}
	}
	if _, err := ParseHealthCheckStates("IDLE,BUSY"); err == nil {
		t.Error("BUSY accepted")
	}
}
