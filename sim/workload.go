package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// JobSpec is one job of a workload, as the JSON workload file spells it.
// Times are in seconds from the start of the simulation.
type JobSpec struct {
	ID           string  `json:"id"`
	Nodes        int     `json:"nodes"`
	GPUsPerNode  int     `json:"gpus_per_node"`
	DurationS    float64 `json:"duration_s"`
	SubmitOffset float64 `json:"submit_offset_s"`
	// TimeLimitS is the time limit; zero means none (the job always runs to
	// its duration).
	TimeLimitS float64 `json:"time_limit_s,omitempty"`
	// Partition defaults to DefaultPartition.
	Partition string `json:"partition,omitempty"`
	Priority  int64  `json:"priority,omitempty"`
	QoS       string `json:"qos,omitempty"`
	// Switches is --switches=N; SwitchesWaitS the @T part in seconds.
	Switches      int     `json:"switches,omitempty"`
	SwitchesWaitS float64 `json:"switches_wait_s,omitempty"`
	Segment       int     `json:"segment,omitempty"`
}

// rawSpec accepts what people write by hand: a numeric or string id, and
// switches as a number or as sbatch's "N@T" string. The required fields
// whose zero is a valid value are pointers, to tell a missing one.
type rawSpec struct {
	JobSpec
	ID           json.RawMessage `json:"id"`
	Switches     json.RawMessage `json:"switches,omitempty"`
	GPUsPerNode  *int            `json:"gpus_per_node"`
	SubmitOffset *float64        `json:"submit_offset_s"`
}

// ParseWorkload reads a JSON list of job objects. Unknown fields, bad
// values and duplicate ids are errors that name the job's position (from
// 1) and id and wrap cluster.ErrInvalid. A job without an id gets its
// position.
func ParseWorkload(r io.Reader) ([]JobSpec, error) {
	var raw []json.RawMessage
	dec := json.NewDecoder(r)
	if err := dec.Decode(&raw); err != nil {
		return nil, cluster.Errorf(cluster.ErrInvalid, "workload: want a JSON list of jobs: %v", err)
	}
	if err := dec.Decode(&json.RawMessage{}); err != io.EOF { // a second value, or garbage
		return nil, cluster.Errorf(cluster.ErrInvalid, "workload: want one JSON list of jobs: something follows the list")
	}
	specs := make([]JobSpec, 0, len(raw))
	seen := make(map[string]int, len(raw))
	for i, msg := range raw {
		n := i + 1 // the job's position, as people count
		s, missing, err := decodeSpec(n, msg)
		if err != nil {
			return nil, err
		}
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("workload job %d (id %q): %w", n, s.ID, err)
		}
		if missing != "" {
			return nil, cluster.Errorf(cluster.ErrInvalid, "workload job %d (id %q): %s", n, s.ID, missing)
		}
		if prev, dup := seen[s.ID]; dup {
			return nil, cluster.Errorf(cluster.ErrInvalid, "workload job %d (id %q): same id as job %d", n, s.ID, prev)
		}
		seen[s.ID] = n
		specs = append(specs, s)
	}
	return specs, nil
}

// decodeSpec decodes the job at position n (from 1). missing says which
// required field, whose zero would be valid, the job lacks ("" when none),
// to report once the values themselves are checked.
func decodeSpec(n int, msg json.RawMessage) (s JobSpec, missing string, err error) {
	var r rawSpec
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return JobSpec{}, "", cluster.Errorf(cluster.ErrInvalid, "workload job %d: %v", n, err)
	}
	s = r.JobSpec
	id, err := decodeID(r.ID, n)
	if err != nil {
		return JobSpec{}, "", cluster.Errorf(cluster.ErrInvalid, "workload job %d: id: %v", n, err)
	}
	s.ID = id
	switch {
	case r.GPUsPerNode == nil:
		missing = "gpus_per_node is missing: give 0 for a job without GPUs"
	case r.SubmitOffset == nil:
		missing = "submit_offset_s is missing: give 0 to submit it at the start"
	}
	if r.GPUsPerNode != nil {
		s.GPUsPerNode = *r.GPUsPerNode
	}
	if r.SubmitOffset != nil {
		s.SubmitOffset = *r.SubmitOffset
	}
	if len(r.Switches) > 0 {
		if s.Switches, s.SwitchesWaitS, err = decodeSwitches(r.Switches, s.SwitchesWaitS); err != nil {
			return JobSpec{}, "", cluster.Errorf(cluster.ErrInvalid, "workload job %d (id %q): switches: %v", n, id, err)
		}
	}
	return s, missing, nil
}

// decodeID takes a JSON string or number; missing means the job's
// position pos.
func decodeID(raw json.RawMessage, pos int) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return strconv.Itoa(pos), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return "", fmt.Errorf("empty")
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", fmt.Errorf("want a string or a number, got %s", raw)
	}
	return n.String(), nil
}

// decodeSwitches takes N or "N" or "N@T" (T in Slurm's time format).
func decodeSwitches(raw json.RawMessage, wait float64) (int, float64, error) {
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, wait, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, 0, fmt.Errorf("want a number or \"N@T\", got %s", raw)
	}
	count, at, found := strings.Cut(s, "@")
	n, err := strconv.Atoi(count)
	if err != nil {
		return 0, 0, fmt.Errorf("%q: count %q is not a number", s, count)
	}
	if found {
		if wait != 0 {
			return 0, 0, fmt.Errorf("%q and switches_wait_s %v both give the wait: give one", s, wait)
		}
		d, err := cluster.ParseDuration(at)
		if err != nil {
			return 0, 0, fmt.Errorf("%q: %v", s, err)
		}
		wait = d.Seconds()
	}
	return n, wait, nil
}

// Validate checks the values of one spec; errors wrap cluster.ErrInvalid.
func (s JobSpec) Validate() error {
	bad := func(format string, args ...any) error {
		return cluster.Errorf(cluster.ErrInvalid, format, args...)
	}
	switch {
	case s.Nodes < 1:
		return bad("nodes is %d, want at least 1", s.Nodes)
	case s.GPUsPerNode < 0:
		return bad("gpus_per_node is %d, want 0 or more", s.GPUsPerNode)
	case !(s.DurationS > 0) || math.IsInf(s.DurationS, 0):
		return bad("duration_s is %v, want more than 0", s.DurationS)
	case !(s.SubmitOffset >= 0) || math.IsInf(s.SubmitOffset, 0):
		return bad("submit_offset_s is %v, want 0 or more", s.SubmitOffset)
	case s.TimeLimitS < 0 || math.IsNaN(s.TimeLimitS) || math.IsInf(s.TimeLimitS, 0):
		return bad("time_limit_s is %v, want more than 0 (or leave it out)", s.TimeLimitS)
	case s.Switches < 0:
		return bad("switches is %d, want 0 or more", s.Switches)
	case s.SwitchesWaitS < 0 || math.IsNaN(s.SwitchesWaitS):
		return bad("switches_wait_s is %v, want 0 or more", s.SwitchesWaitS)
	case s.Segment < 0:
		return bad("segment is %d, want 0 or more", s.Segment)
	case s.Segment > 0 && s.Nodes%s.Segment != 0:
		return bad("nodes %d is not a multiple of segment %d", s.Nodes, s.Segment)
	}
	if _, err := cluster.ParseQoS(s.QoS); err != nil {
		return bad("qos %q: use high, normal or low", s.QoS)
	}
	return nil
}

// seconds converts a spec's seconds to a duration, to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
