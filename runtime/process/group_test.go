package process_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitForGroup waits until the task has written "started <pid>" to out, the
// PID of its shell, which leads its process group, and at least n live
// processes share that group; it returns the group ID.
func waitForGroup(t *testing.T, out string, n int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(out)
		if f := strings.Fields(string(b)); len(f) == 2 && f[0] == "started" {
			pgid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("output %q", b)
			}
			if len(liveGroupMembers(t, pgid)) >= n {
				return pgid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the task's process group never had %d live processes", n)
	return 0
}

// liveGroupMembers lists the PIDs in group pgid that are not zombies.
func liveGroupMembers(t *testing.T, pgid int) []int {
	var pids []int
	for _, p := range processes(t) {
		if p.pgrp == pgid && p.state != "Z" {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

type proc struct {
	pid, ppid, pgrp int
	state           string
}

func processes(t *testing.T) []proc {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var ps []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+1:])
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		ps = append(ps, proc{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0]})
	}
	return ps
}
