package nodeagent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// An attempt folder, <StateDir>/jobs/<job>.<attempt>, exists from just
// before the agent starts an attempt's task until the task has ended. One
// found when the agent starts belongs to a task an earlier run of the
// agent started and never saw end. If the runtime found that task again,
// the agent has re-adopted it (adopt.go) and the folder stays. Otherwise
// the task cannot be accounted for (it never started, or its runtime keeps
// no records, or it died without one): before it talks to the controller,
// the agent kills every process group recorded in the folder, removes it,
// and remembers its attempt: an assignment for it is reported LOST, never
// started a second time, even if the controller never heard that it
// started.
//
// Agents before supervised tasks recorded a process task's group in
// pgidFile.<rank>, as "<pgid> <boot id>"; the boot ID keeps a group ID
// from an earlier boot, which may name unrelated processes now, from being
// killed. Such a record left by an older agent is still honoured.

// pgidFile is the prefix of the file recording a task's process group.
const pgidFile = "pgid"

// attemptKey names one attempt of a job, and so its folder.
type attemptKey struct {
	job     uint64
	attempt int32
}

// jobDir is the folder of key's attempt.
func (a *Agent) jobDir(key taskKey) string {
	return filepath.Join(a.cfg.StateDir, "jobs", fmt.Sprintf("%d.%d", key.job, key.attempt))
}

// cleanLeftovers kills the process groups recorded in attempt folders left
// by an earlier run of the agent, removes those folders, and returns their
// attempts; the folders of adopted attempts are left alone.
func (a *Agent) cleanLeftovers(adopted map[attemptKey]bool) map[attemptKey]bool {
	dir := filepath.Join(a.cfg.StateDir, "jobs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		a.log.Warn("reading the state directory for tasks left by an earlier run", "dir", dir, "err", err)
		return nil
	}
	left := make(map[attemptKey]bool)
	for _, e := range entries {
		key, ok := parseAttempt(e.Name())
		if !ok || !e.IsDir() || adopted[key] {
			continue
		}
		left[key] = true
		path := filepath.Join(dir, e.Name())
		a.killRecordedGroups(path)
		if err := os.RemoveAll(path); err != nil {
			a.log.Warn("removing a job directory left by an earlier run", "dir", path, "err", err)
			continue
		}
		a.log.Info("removed job directory left by an earlier run; its task will be reported lost", "dir", path)
	}
	return left
}

// killRecordedGroups sends SIGKILL to each process group recorded in an
// attempt folder that still has processes.
func (a *Agent) killRecordedGroups(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, pgidFile+".*"))
	boot := runtime.BootID()
	for _, f := range files {
		pgid, recordedBoot, err := readGroup(f)
		switch {
		case err != nil:
			a.log.Warn("unreadable process group record", "file", f, "err", err)
		case recordedBoot != boot:
			a.log.Info("process group recorded in an earlier boot; not killing it", "file", f, "pgid", pgid)
		default:
			a.killGroup(f, pgid)
		}
	}
}

// killGroup sends SIGKILL to process group pgid if it still exists.
func (a *Agent) killGroup(file string, pgid int) {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		a.log.Info("task left by an earlier run already gone", "file", file, "pgid", pgid)
		return
	}
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	switch {
	case err == nil:
		a.log.Warn("killed task left running by an earlier run of the agent", "file", file, "pgid", pgid)
	case errors.Is(err, syscall.ESRCH):
		a.log.Info("task left by an earlier run already gone", "file", file, "pgid", pgid)
	default:
		a.log.Error("cannot kill task left running by an earlier run of the agent; it may still use its GPUs",
			"file", file, "pgid", pgid, "err", err)
	}
}

// readGroup reads a process group record. Group IDs 0 and 1 are refused:
// kill(0) and kill(-1) would reach the agent's own group or every process.
func readGroup(path string) (pgid int, boot string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, "", fmt.Errorf("want \"<pgid> <boot id>\", have %q", b)
	}
	pgid, err = strconv.Atoi(f[0])
	if err != nil || pgid <= 1 || pgid == syscall.Getpgrp() {
		return 0, "", fmt.Errorf("process group %q not a task's", f[0])
	}
	return pgid, f[1], nil
}

// parseAttempt parses an attempt folder's name, "<job>.<attempt>".
func parseAttempt(name string) (attemptKey, bool) {
	j, at, ok := strings.Cut(name, ".")
	if !ok {
		return attemptKey{}, false
	}
	job, err1 := strconv.ParseUint(j, 10, 64)
	attempt, err2 := strconv.ParseInt(at, 10, 32)
	if err1 != nil || err2 != nil || attempt < 0 {
		return attemptKey{}, false
	}
	return attemptKey{job: job, attempt: int32(attempt)}, true
}
