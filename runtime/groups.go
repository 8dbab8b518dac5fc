package runtime

import (
	"os/user"
	"slices"
	"strconv"
)

// Groups returns the supplementary groups a task of uid runs with: the
// user's groups on this host (from the group database, as initgroups
// reads it), its primary gid among them. A user this host does not know
// gets none: never the agent's own groups.
func Groups(uid, gid int) []uint32 {
	out := []uint32{}
	if gid >= 0 {
		out = append(out, uint32(gid))
	}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return out
	}
	ids, err := u.GroupIds()
	if err != nil {
		return out
	}
	for _, s := range ids {
		if g, err := strconv.ParseUint(s, 10, 32); err == nil && !slices.Contains(out, uint32(g)) {
			out = append(out, uint32(g))
		}
	}
	return out
}
