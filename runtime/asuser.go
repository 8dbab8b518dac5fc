package runtime

import (
	"fmt"
	"os"
	"os/user"
	goruntime "runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// AsUser runs fn with the file-system identity of uid: its fsuid, fsgid
// gid and supplementary groups (Groups), so that the files fn opens or
// creates are checked against, and owned by, the job's user and not the
// agent's root. A negative uid, or an agent that is not root (it could not
// switch; its own identity is what the task gets), runs fn as is.
//
// The switch holds for one OS thread, which fn runs on alone and which is
// thrown away afterwards (the goroutine ends still locked to it), so no
// other goroutine ever runs with the user's identity, nor the agent's
// threads with a half-restored one.
func AsUser(uid, gid int, fn func() error) error {
	if uid < 0 || os.Geteuid() != 0 {
		return fn()
	}
	if gid < 0 {
		gid = primaryGID(uid) // never root's group by default
	}
	groups := Groups(uid, gid)
	done := make(chan error, 1)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread exits with the goroutine
		done <- switchThenRun(uid, gid, groups, fn)
	}()
	return <-done
}

// primaryGID is uid's group in the user database, else nogroup's.
func primaryGID(uid int) int {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		if g, err := strconv.Atoi(u.Gid); err == nil {
			return g
		}
	}
	return nogroup
}

// nogroup is the group of a user the host does not know.
const nogroup = 65534

func switchThenRun(uid, gid int, groups []uint32, fn func() error) error {
	ids := make([]int, len(groups))
	for i, g := range groups {
		ids[i] = int(g)
	}
	if err := unix.Setgroups(ids); err != nil {
		return fmt.Errorf("take the groups of uid %d: %w", uid, err)
	}
	// setfsuid and setfsgid report no error; asking with -1 (which fails)
	// returns the current value.
	unix.SetfsgidRetGid(gid)
	unix.SetfsuidRetUid(uid)
	if cur, _ := unix.SetfsgidRetGid(-1); cur != gid {
		return fmt.Errorf("take fsgid %d: it is still %d", gid, cur)
	}
	if cur, _ := unix.SetfsuidRetUid(-1); cur != uid {
		return fmt.Errorf("take fsuid %d: it is still %d", uid, cur)
	}
	return fn()
}
