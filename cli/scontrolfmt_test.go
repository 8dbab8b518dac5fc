package cli

import (
	"os/user"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// testGroups are the groups the tests know, in place of the host's: the
// golden output of scontrol show job (GroupId=users(100)) must not depend
// on /etc/group.
var testGroups = map[string]string{"0": "root", "100": "users"}

// testUsers are the users the tests know by name, likewise (sinfo -R -l's
// USER, alice(1000)).
var testUsers = map[string]string{"root": "0", "alice": "1000"}

func init() {
	lookupGroup = func(gid string) (*user.Group, error) {
		if name, ok := testGroups[gid]; ok {
			return &user.Group{Gid: gid, Name: name}, nil
		}
		return nil, user.UnknownGroupIdError(gid)
	}
	lookupUserName = func(name string) (*user.User, error) {
		if uid, ok := testUsers[name]; ok {
			return &user.User{Uid: uid, Username: name}, nil
		}
		return nil, user.UnknownUserError(name)
	}
}

// GroupId= names the group as Slurm 22.05 does: its name, or nobody.
func TestGroupName(t *testing.T) {
	for gid, want := range map[int32]string{0: "root", 100: "users", 4242: "nobody"} {
		if got := groupName(gid); got != want {
			t.Errorf("groupName(%d) = %q, want %q", gid, got, want)
		}
	}
}

// scontrol prints every duration as Slurm's secs2time_str and
// mins2time_str: hours always two digits, days before a dash, UNLIMITED
// for no limit; sacct's Timelimit prints the same.
func TestLimitOrUnlimited(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                            "UNLIMITED",
		10 * time.Minute:             "00:10:00",
		90 * time.Minute:             "01:30:00",
		24 * time.Hour:               "1-00:00:00",
		36*time.Hour + 5*time.Second: "1-12:00:05",
	} {
		if got := limitOrUnlimited(d); got != want {
			t.Errorf("limitOrUnlimited(%v) = %q, want %q", d, got, want)
		}
	}
}

// scontrol show job's TimeLimit= and sacct's Timelimit print a limit the
// same way.
func TestTimeLimitAsSacct(t *testing.T) {
	fields, _ := sacctLookup("Timelimit")
	for _, secs := range []int64{0, 600, 5400, 86400, 90061} {
		j := &phalanxv1.Job{TimeLimitSeconds: secs, Spec: &phalanxv1.JobSpec{}, StartTime: at("2024-05-01T11:00:00")}
		sacct := fields[0].value(&sacctRow{Job: j}, &SacctView{})
		show := FormatJob(j, testNow, time.UTC)
		if !strings.Contains(show, " TimeLimit="+sacct+"\n") {
			t.Errorf("limit %ds: sacct prints %q, scontrol show job:\n%s", secs, sacct, show)
		}
	}
}
