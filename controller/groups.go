package controller

import (
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// checkGroups refuses a job whose user is in none of its partition's
// AllowGroups (Slurm's key), with Slurm's message. Root's jobs, and jobs
// that run as the agent, pass, as in Slurm. Membership is what the
// controller's host knows (Config.LookupGroups): the same directory as the
// nodes', on a real cluster.
func (s *Server) checkGroups(job *cluster.Job, parts []*cluster.Partition) error {
	i := slices.IndexFunc(parts, func(p *cluster.Partition) bool { return p.Name == job.Partition })
	if i < 0 || len(parts[i].AllowGroups) == 0 || job.UID <= 0 {
		return nil
	}
	part := parts[i]
	lookup := s.cfg.LookupGroups
	if lookup == nil {
		lookup = hostGroups
	}
	groups, err := lookup(job.UID, job.GID)
	if err != nil {
		return cluster.Errorf(cluster.ErrPermission, "User's group not permitted to use this partition: partition %s takes members of %s, and the groups of uid %d cannot be read here: %v",
			part.Name, strings.Join(part.AllowGroups, ","), job.UID, err)
	}
	for _, g := range groups {
		if slices.Contains(part.AllowGroups, g) {
			return nil
		}
	}
	return cluster.Errorf(cluster.ErrPermission, "User's group not permitted to use this partition: partition %s takes members of %s; %s is in %s",
		part.Name, strings.Join(part.AllowGroups, ","), job.User, strings.Join(groups, ","))
}

// hostGroups names uid's groups, primary gid first, from this host's user
// and group database; a uid the host does not know has its primary group
// only.
func hostGroups(uid, gid int) ([]string, error) {
	ids := []string{strconv.Itoa(gid)}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		if more, err := u.GroupIds(); err == nil {
			ids = append(ids, more...)
		}
	}
	var names []string
	for _, id := range ids {
		g, err := user.LookupGroupId(id)
		if err != nil {
			continue // a gid without a name matches no AllowGroups entry
		}
		if !slices.Contains(names, g.Name) {
			names = append(names, g.Name)
		}
	}
	return names, nil
}
