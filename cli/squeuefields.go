package cli

import (
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// squeue's fields of what a job asks for and who owns it, as Slurm's
// squeue(1) names them (-o letter, -O name, header). Fields that only -O
// names have a control byte for a letter, which no -o format can hold.
var squeueMore = []struct {
	name   string
	letter byte
	header string
}{
	{"NumCPUs", 'C', "CPUS"}, {"MinCpus", 'c', "MIN_CPUS"}, {"MinMemory", 'm', "MIN_MEMORY"},
	{"EndTime", 'e', "END_TIME"}, {"UserId", 'U', "UID"}, {"GroupId", 'G', "GROUP"}, {"GroupName", 'g', "GROUP"},
	{"ExcNodes", 'x', "EXC_NODES"}, {"ReqNodes", 'n', "REQ_NODES"}, {"BatchHost", 'B', "EXEC_HOST"},
	{"PriorityLong", 'Q', "PRIORITY"}, {"Command", 'o', "COMMAND"}, {"Comment", 'k', "COMMENT"},
	{"STDOUT", oStdout, "STDOUT"}, {"STDERR", oStderr, "STDERR"}, {"STDIN", oStdin, "STDIN"},
	{"PendingTime", oPendingTime, "PENDING_TIME"}, {"tres-alloc", oTRESAlloc, "TRES_ALLOC"},
}

// The -O-only fields.
const (
	oStdout byte = iota + 1
	oStderr
	oStdin
	oPendingTime
	oTRESAlloc
)

func init() {
	for _, f := range squeueMore {
		squeueNames = append(squeueNames, struct {
			name   string
			letter byte
		}{f.name, f.letter})
		if _, ok := squeueHeaders[f.letter]; !ok {
			squeueHeaders[f.letter] = f.header
		}
	}
}

// moreJobField is field c of squeueMore for job j; ok is false for a
// letter that is not one of them.
func moreJobField(j *phalanxv1.Job, c byte, v SqueueView) (string, bool) {
	s := j.GetSpec()
	switch c {
	case 'C': // scontrol's NumCPUs, a CPU a node at least
		return strconv.FormatInt(max(jobCPUs(j), int64(jobNodeCount(j))), 10), true
	case 'c':
		return strconv.Itoa(int(max(1, s.GetCpusPerNode()))), true
	case 'm':
		if mb := s.GetMemoryMb(); mb > 0 {
			return strconv.FormatInt(mb, 10) + "M", true
		}
		return "0", true
	case 'e':
		return endTime(j, v.Loc, "N/A"), true
	case 'U':
		return strconv.Itoa(int(s.GetUid())), true
	case 'G':
		return strconv.Itoa(int(s.GetGid())), true
	case 'g':
		return groupName(s.GetGid()), true
	case 'x':
		return hostlist.Compress(s.GetExclude()), true
	case 'n':
		return hostlist.Compress(s.GetNodelist()), true
	case 'B':
		if len(j.Alloc) > 0 {
			return j.Alloc[0].Node, true
		}
		return "n/a", true
	case 'o':
		return cluster.CommandLine(s.GetScriptPath(), s.GetScriptArgs()), true
	case 'k':
		return orDefault(s.GetComment(), "(null)"), true
	case oStdout:
		stdout, _ := stdPaths(j)
		return stdout, true
	case oStderr:
		_, stderr := stdPaths(j)
		return stderr, true
	case oStdin:
		return "/dev/null", true
	case oPendingTime:
		return strconv.FormatInt(int64(waited(j, v.Now)/time.Second), 10), true
	case oTRESAlloc: // what the job holds once started, else what it asks for
		return jobTRES(j), true
	}
	return "", false
}

// endTime is squeue's END_TIME (none: N/A), scontrol's EndTime (none:
// Unknown), as Slurm's: when the job ended, or will by its limit once
// started, or would if it started when expected.
func endTime(j *phalanxv1.Job, loc *time.Location, none string) string {
	return fmtTime(endAt(j), loc, none)
}

// endAt is endTime's time, nil for none.
func endAt(j *phalanxv1.Job) *timestamppb.Timestamp {
	start := j.StartTime
	if j.State == string(cluster.JobPending) {
		start = j.ExpectedStart
	}
	switch {
	case j.EndTime != nil:
		return j.EndTime
	case start == nil || jobLimit(j) == 0:
		return nil
	}
	return timestamppb.New(start.AsTime().Add(jobLimit(j)))
}
