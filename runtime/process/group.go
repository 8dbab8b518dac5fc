package process

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// groupAlive reports whether a process other than a zombie is left in
// process group pgid. kill(-pgid, 0) answers quickly when the group is gone;
// when it is not, /proc tells whether only zombies remain (orphans whose
// new parent does not reap them, as under some container inits).
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false
	}
	live, err := groupMembers(pgid, 0)
	if err != nil {
		return true // cannot tell; kill said someone is there
	}
	return len(live) > 0
}

// procStat returns the state and process group of pid from /proc/pid/stat.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name is in parentheses and may contain spaces; the
	// fields after the last ')' are: state ppid pgrp ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 3 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(fields[2])
	if err != nil || len(fields[0]) != 1 {
		return 0, 0, false
	}
	return fields[0][0], pgrp, true
}

// groupMembers lists the live (not zombie) processes of process group
// pgid but except (0: none). A process that ends meanwhile is missed, or
// signalled in vain.
func groupMembers(pgid, except int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == except {
			continue
		}
		if state, group, ok := procStat(pid); ok && group == pgid && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out, nil
}
