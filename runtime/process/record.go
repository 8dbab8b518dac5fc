package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/phalanx-hpc/phalanx/internal/durable"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// The runtime's state directory holds, per task ID:
//
//	<id>.task  the task record, written by its supervisor before the task
//	           is reported started: the process group, the supervisor's PID
//	           and start time, the boot
//	<id>.exit  how the task ended, written by the supervisor once the group
//	           is empty, before it exits
//	<id>.log   what the supervisor itself had to say (normally nothing)
//
// Both JSON files are written to a temporary name, synced and renamed, so a
// reader sees all of one or none. They stay until the agent closes the task
// (Task.Close), which it does once it has reported the end: an end that
// happened while no agent ran is still there for the next one.

// recordVersion is the version of the .task and .exit formats.
const recordVersion = 1

const (
	recordExt = ".task"
	exitExt   = ".exit"
	logExt    = ".log"
)

// record is a task's <id>.task file.
type record struct {
	V  int    `json:"v"`
	ID string `json:"id"`
	// PGID is the task's process group (its leader's PID).
	PGID int `json:"pgid"`
	// ShimPID and ShimStart (the start time in clock ticks after boot,
	// field 22 of /proc/PID/stat) identify the supervisor: a PID alone may
	// have been reused since.
	ShimPID   int    `json:"shim_pid"`
	ShimStart uint64 `json:"shim_start"`
	// Boot is the kernel's boot ID: processes of an earlier boot are gone,
	// and their IDs may name unrelated processes now.
	Boot string `json:"boot"`
	// Fenced: the supervisor kills the task when the node's lease ends
	// (lease.go). Supervisors of agents before leases never do.
	Fenced bool `json:"fenced,omitempty"`
}

// exitRecord is a task's <id>.exit file. Fenced: its supervisor killed it
// when the node's lease ended (lease.go).
type exitRecord struct {
	V      int  `json:"v"`
	Code   int  `json:"code"`
	Signal int  `json:"signal"`
	Fenced bool `json:"fenced,omitempty"`
}

func (e exitRecord) status() runtime.ExitStatus {
	return runtime.ExitStatus{Code: e.Code, Signal: syscall.Signal(e.Signal)}
}

func recordPath(dir, id string) string { return filepath.Join(dir, id+recordExt) }
func exitPath(dir, id string) string   { return filepath.Join(dir, id+exitExt) }
func logPath(dir, id string) string    { return filepath.Join(dir, id+logExt) }

// writeJSON writes v to path atomically and durably.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return durable.WriteFile(path, append(b, '\n'), 0o600)
}

// readRecord reads and checks a .task file.
func readRecord(path string) (record, error) {
	var r record
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("task record %s: %w", path, err)
	}
	switch {
	case r.V != recordVersion:
		return r, fmt.Errorf("task record %s: version %d, this agent reads %d", path, r.V, recordVersion)
	case r.PGID <= 1 || r.PGID == syscall.Getpgrp() || r.ShimPID <= 1 || r.ID == "":
		return r, fmt.Errorf("task record %s: process group %d or supervisor %d not a task's", path, r.PGID, r.ShimPID)
	}
	return r, nil
}

// readExit reads a .exit file; ok is false when there is none.
func readExit(path string) (e exitRecord, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return e, false, nil
	}
	if err != nil {
		return e, false, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, false, fmt.Errorf("exit record %s: %w", path, err)
	}
	if e.V != recordVersion {
		return e, false, fmt.Errorf("exit record %s: version %d, this agent reads %d", path, e.V, recordVersion)
	}
	return e, true, nil
}

// removeRecords removes a task's files.
func removeRecords(dir, id string) error {
	var errs []error
	for _, p := range []string{recordPath(dir, id), exitPath(dir, id), logPath(dir, id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// startTime returns the start time of pid in clock ticks after boot
// (field 22 of /proc/PID/stat); ok is false when pid does not exist.
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	// After the command: state (field 3) ... starttime (field 22).
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(fields[19], 10, 64)
	return v, err == nil
}
