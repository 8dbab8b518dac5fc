package cli

import (
	"fmt"
	"strings"
	"testing"
)

func TestUpdateArguments(t *testing.T) {
	node, _, err := updateRequest([]string{"NodeName=gpu[001-003]", "State=drain", "Reason=bad ECC"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(node.Names, ",") != "gpu001,gpu002,gpu003" || node.State != "DRAIN" || node.Reason != "bad ECC" {
		t.Errorf("node update = %v", node)
	}
	_, job, err := updateRequest([]string{"jobid=42", "TimeLimit=1-00:00:00", "JobName=long run"})
	if err != nil {
		t.Fatal(err)
	}
	if len(job.refs) != 1 || job.refs[0].String() != "42" || job.req.GetName() != "long run" || job.req.GetTimeLimitSeconds() != 86400 {
		t.Errorf("job update = %v %v", job.refs, job.req)
	}
	for arg, want := range map[string]int64{"TimeLimit=+30": 1800, "TimeLimit=-1:00:00": -3600, // Slurm's changes to a limit
		"TimeLimit+=30": 1800, "timelimit-=1:00:00": -3600} { // and their other spelling, scontrol(1)'s "TimeLimit+=30"
		if _, job, err := updateRequest([]string{"JobId=7", arg}); err != nil || job.req.TimeLimitSeconds != nil || job.req.GetTimeLimitChangeSeconds() != want {
			t.Errorf("%s: %v, %v; want a change of %d seconds", arg, job, err, want)
		}
	}
	if _, _, err := updateRequest([]string{"JobId=7", "TimeLimit=+UNLIMITED"}); err == nil {
		t.Errorf("TimeLimit=+UNLIMITED: accepted")
	}
	if _, job, err := updateRequest([]string{"JobId=7", "TimeLimit=UNLIMITED"}); err != nil || job.req.TimeLimitSeconds == nil || *job.req.TimeLimitSeconds != 0 {
		t.Errorf("TimeLimit=UNLIMITED: %v, %v; want 0 (no limit)", job, err)
	}
	// 0 is a limit of zero, as Slurm's scontrol reads it (sbatch's --time=0
	// is none); it was sent as no limit. UNLIMITED and INFINITE are none.
	for _, v := range []string{"0", "0:00", "00:00:00", "0-0"} {
		if _, job, err := updateRequest([]string{"JobId=7", "TimeLimit=" + v}); err != nil || !job.req.TimeLimitZero || job.req.TimeLimitSeconds != nil {
			t.Errorf("TimeLimit=%s: %v, %v; want a limit of zero", v, job, err)
		}
	}
	for _, v := range []string{"INFINITE", "unlimited"} {
		if _, job, err := updateRequest([]string{"JobId=7", "TimeLimit=" + v}); err != nil || job.req.TimeLimitZero || job.req.TimeLimitSeconds == nil || *job.req.TimeLimitSeconds != 0 {
			t.Errorf("TimeLimit=%s: %v, %v; want no limit", v, job, err)
		}
	}
	_, job, err = updateRequest([]string{"JobId=7", "Partition=debug", "NumNodes=2-4", "Dependency=afterok:5:6", "Nice=10", "QOS=low", "Priority=900"})
	if err != nil || job.req.GetPartition() != "debug" || job.req.GetNodes() != 2 || job.req.GetDependency() != "afterok:5:6" ||
		job.req.GetNice() != 10 || job.req.GetQos() != "low" || job.req.GetPriority() != 900 {
		t.Errorf("a pending job's request: %v, %v", job, err)
	}
	if _, job, err := updateRequest([]string{"JobId=7", "Dependency="}); err != nil || job.req.Dependency == nil || *job.req.Dependency != "" {
		t.Errorf("Dependency= (remove it): %v, %v", job, err)
	}
	// JobId= takes Slurm's job lists: array tasks, several jobs.
	_, job, err = updateRequest([]string{"JobId=87_3,87_[5-6],90", "Nice=5"})
	if err != nil || fmt.Sprint(job.refs) != "[87_3 87_[5-6] 90]" || job.req.JobId != 0 {
		t.Errorf("JobId=87_3,87_[5-6],90: %v, %v", job, err)
	}

	// ArrayTaskThrottle= changes a whole array, named by its ID.
	if _, job, err := updateRequest([]string{"JobId=87", "ArrayTaskThrottle=4"}); err != nil || job.req.GetArrayTaskThrottle() != 4 || job.req.ArrayTaskThrottle == nil {
		t.Errorf("ArrayTaskThrottle=4: %v, %v", job, err)
	}
	if _, job, err := updateRequest([]string{"JobId=87", "arraytaskthrottle=0"}); err != nil || job.req.ArrayTaskThrottle == nil || *job.req.ArrayTaskThrottle != 0 {
		t.Errorf("ArrayTaskThrottle=0 (no limit): %v, %v", job, err)
	}

	for _, bad := range [][]string{
		{"JobId=87", "ArrayTaskThrottle=-1"},             // Slurm's "Invalid ArrayTaskThrottle value"
		{"JobId=87", "ArrayTaskThrottle=many"},           // not a number
		{"JobId=87_3", "ArrayTaskThrottle=2"},            // a task, not the array
		{"NodeName=gpu001", "Weight=2"},                  // unsupported field
		{"NodeName=gpu001", "State=DRAIN", "State=DOWN"}, // twice
		{"NodeName=gpu001"},                              // no state
		{"NodeName=gpu[3-1]", "State=DRAIN", "Reason=x"}, // bad hostlist
		{"NodeName=gpu001", "TimeLimit=1:00"},            // a job's field
		{"JobId=1"},                                      // nothing to change
		{"JobId=x", "JobName=a"},                         // bad ID
		{"JobId=1_x", "JobName=a"},                       // bad task
		{"JobId=1", "TimeLimit=soon"},                    // bad limit
		{"JobId=1", "TimeLimit+=-30"},                    // a change given twice, refused by Slurm too
		{"JobId=1", "State=DRAIN"},                       // a node's field
		{"JobId=1", "NodeName=gpu001", "State=DRAIN"},    // both
		{"JobName="},                                      // empty value
		{"Reason=x"},                                      // neither nodes nor job
		{"JobId=1", "NumNodes=0"},                         // no nodes
		{"JobId=1", "NumNodes=3-1"},                       // reversed: was taken as 3
		{"JobId=1", "NumNodes=2-abc"},                     // no MAX: was taken as 2
		{"JobId=1", "Dependency=afterwards:2"},            // bad dependency
		{"JobId=1", "Nice=high"},                          // not a number
		{"JobId=1", "Priority=-1"},                        // negative
		{"NodeName=gpu001", "State=DRAIN", "Partition=x"}, // a job's field
		{"JobId=1", "MaxTime=1:00"},                       // a partition's field
	} {
		if _, _, err := updateRequest(bad); err == nil {
			t.Errorf("update %v: no error", bad)
		}
	}
}

func TestPartitionUpdateRequest(t *testing.T) {
	f, err := updateFields([]string{"PartitionName=gpu", "State=down", "MaxTime=1-00:00:00", "DefaultTime=30", "MaxNodes=UNLIMITED", "MinNodes=2", "PriorityTier=3", "Default=yes"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := partitionUpdate(f)
	if err != nil {
		t.Fatal(err)
	}
	if req.Name != "gpu" || req.GetState() != "DOWN" || req.GetMaxTimeSeconds() != 86400 || req.GetDefaultTimeSeconds() != 1800 ||
		req.MaxNodes == nil || req.GetMaxNodes() != 0 || req.GetMinNodes() != 2 || req.GetPriorityTier() != 3 || !req.GetDefault() {
		t.Errorf("request %v", req)
	}
	for _, bad := range [][]string{
		{"PartitionName=gpu"},                 // nothing to change
		{"PartitionName=gpu", "Nice=3"},       // a job's field
		{"PartitionName=gpu", "MaxNodes=-1"},  // negative
		{"PartitionName=gpu", "MinNodes=-1"},  // negative
		{"PartitionName=gpu", "MaxTime=soon"}, // bad time
		{"PartitionName=gpu", "Default=maybe"},
	} {
		f, err := updateFields(bad)
		if err == nil {
			_, err = partitionUpdate(f)
		}
		if err == nil {
			t.Errorf("update %v: no error", bad)
		}
	}
}

// An error of scontrol update names the key as Slurm spells it, whatever
// case it was written in: "maxtime=abc: invalid time limit" named MaxTime=
// in lower case, as updateFields stores it.
func TestUpdateErrorsNameKeysAsSlurm(t *testing.T) {
	for args, want := range map[string]string{
		"PartitionName=gpu MaxTime=abc":          `MaxTime=abc: invalid time limit "abc"`,
		"PartitionName=gpu maxtime=abc":          `MaxTime=abc: invalid time limit "abc"`,
		"PartitionName=gpu DEFAULTTIME=x":        `DefaultTime=x: invalid time limit "x"`,
		"PartitionName=gpu maxnodes=x":           "MaxNodes=x: give a count, 0 or more",
		"PartitionName=gpu MinNodes=-1":          "MinNodes=-1: give a count, 0 or more",
		"PartitionName=gpu prioritytier=-1":      "PriorityTier=-1: give a count, 0 or more",
		"PartitionName=gpu nodename=gpu001":      "update PartitionName=gpu: NodeName= is not a partition's: ",
		"JobId=1 maxtime=5":                      "update: MaxTime= is a partition's (PartitionName=P MaxTime=...): ",
		"JobId=1 jobname=":                       "update: jobname needs a value (JobName=...)",
		"JobId=1 name=":                          "update: name needs a value (JobName=...)",
		"NodeName=gpu001 state=DRAIN STATE=DOWN": "update: State is given twice",
		"JobId=1 nodecnt=2 NumNodes=3":           "update: NumNodes is given twice",
	} {
		f, err := updateFields(strings.Fields(args))
		if err == nil && f["partitionname"] != "" {
			_, err = partitionUpdate(f)
		} else if err == nil {
			_, _, err = updateRequest(strings.Fields(args))
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("update %s: %v; want %q...", args, err, want)
		}
	}
}

// A state scontrol update does not know is named as the user wrote it:
// "State=bogus" was echoed "State=BOGUS" (partition) and `node state
// "BOGUS"`, the value as phx sent it.
func TestUpdateStatesNamedAsWritten(t *testing.T) {
	for args, want := range map[string]string{
		"NodeName=gpu001 State=bogus":        "State=bogus: a node's state is DRAIN, RESUME, UNDRAIN or DOWN",
		"NodeName=gpu001 state=Idle":         "State=Idle: a node's state is DRAIN, RESUME, UNDRAIN or DOWN",
		"PartitionName=gpu State=bogus":      "State=bogus: a partition's state is UP, DOWN, DRAIN or INACTIVE",
		"PartitionName=gpu STATE=Maintained": "State=Maintained: a partition's state is UP, DOWN, DRAIN or INACTIVE",
	} {
		f, err := updateFields(strings.Fields(args))
		if err == nil && f["partitionname"] != "" {
			_, err = partitionUpdate(f)
		} else if err == nil {
			_, _, err = updateRequest(strings.Fields(args))
		}
		if err == nil || err.Error() != want {
			t.Errorf("update %s: %v; want %q", args, err, want)
		}
	}
}
