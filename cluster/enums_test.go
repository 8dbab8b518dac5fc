package cluster

import (
	"errors"
	"testing"
)

func TestParseQoSAndPreemptMode(t *testing.T) {
	for in, want := range map[string]QoS{"": QoSNormal, "HIGH": QoSHigh, "normal": QoSNormal, "Low": QoSLow} {
		if q, err := ParseQoS(in); err != nil || q != want {
			t.Errorf("ParseQoS(%q) = %q, %v; want %q", in, q, err, want)
		}
	}
	if _, err := ParseQoS("urgent"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseQoS(urgent) = %v, want ErrInvalid", err)
	}
	if QoSLow.Level() >= QoS("").Level() || QoS("").Level() != QoSNormal.Level() || QoS("HIGH").Level() <= QoSNormal.Level() {
		t.Errorf("levels: low %d, none %d, normal %d, HIGH %d", QoSLow.Level(), QoS("").Level(), QoSNormal.Level(), QoS("HIGH").Level())
	}
	for in, want := range map[string]PreemptMode{"": PreemptOff, "off": PreemptOff, "requeue": PreemptRequeue} {
		if m, err := ParsePreemptMode(in); err != nil || m != want || m.Requeues() != (want == PreemptRequeue) {
			t.Errorf("ParsePreemptMode(%q) = %q, %v; want %q", in, m, err, want)
		}
	}
	if _, err := ParsePreemptMode("SUSPEND"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParsePreemptMode(SUSPEND) = %v, want ErrInvalid", err)
	}
}
