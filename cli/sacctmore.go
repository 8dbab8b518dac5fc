package cli

import (
	"fmt"
	"strings"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// sacct's record fields of what a job asked for and how long it waited,
// beside sacctFields, merged into them in Slurm's (alphabetical) order at
// start (sacctcols.go).
var sacctMore = []sacctField{
	{"Cluster", 10, '+', func(_ *sacctRow, v *SacctView) string { return v.Cluster }},
	{"Comment", 15, '+', func(r *sacctRow, _ *SacctView) string { return r.GetSpec().GetComment() }},
	{"DerivedExitCode", 15, '+', func(r *sacctRow, _ *SacctView) string { return rowExitCode(r) }},
	{"Flags", 19, '+', func(r *sacctRow, _ *SacctView) string { return jobFlags(r.Job) }},
	{"Group", 9, '+', func(r *sacctRow, _ *SacctView) string { return groupName(r.GetSpec().GetGid()) }},
	{"NTasks", 8, 0, func(*sacctRow, *SacctView) string { return "" }}, // a step's, as Slurm's job records
	{"Planned", 10, 0, func(r *sacctRow, v *SacctView) string { return reserved(r, v.Now) }},
	{"ReqMem", 10, '+', func(r *sacctRow, _ *SacctView) string {
		return reqMem(int64(jobNodeCount(r.Job)) * r.GetSpec().GetMemoryMb())
	}},
	{"ReqTRES", 10, '+', func(r *sacctRow, _ *SacctView) string { return reqTRES(r.Job) }},
	{"Reserved", 10, 0, func(r *sacctRow, v *SacctView) string { return reserved(r, v.Now) }}, // Planned's 22.05 name
	{"SubmitLine", 20, '+', func(r *sacctRow, _ *SacctView) string { return r.GetSpec().GetSubmitLine() }},
	{"Suspended", 10, 0, func(*sacctRow, *SacctView) string { return "00:00:00" }}, // jobs are never suspended
}

// schedFlags are Slurm's names of how a job was started, by the API's
// placed_by. SchedSubmit (started by the attempt Slurm makes when a job is
// submitted) never shows: Phalanx has no such attempt, its passes are
// coalesced, and a job that starts at once starts in a pass like any other.
var schedFlags = map[string]string{"main": "SchedMain", "backfill": "SchedBackfill"}

// jobFlags is Flags: how the scheduler started the row's attempt,
// SchedMain or SchedBackfill; empty for an attempt not started (a pending
// job, one cancelled before it ran) or started by a version that did not
// record it.
func jobFlags(j *phalanxv1.Job) string {
	for _, a := range j.Attempts {
		if a.Attempt == j.Attempt {
			return schedFlags[a.PlacedBy]
		}
	}
	return ""
}

// waited is how long a job waited to start (squeue's pending time):
// until it started, or until now while pending.
func waited(j *phalanxv1.Job, now time.Time) time.Duration {
	if j.SubmitTime == nil {
		return 0
	}
	end := now
	if j.StartTime != nil {
		end = j.StartTime.AsTime()
	} else if j.EndTime != nil {
		end = j.EndTime.AsTime()
	}
	return max(end.Sub(j.SubmitTime.AsTime()), 0)
}

// reserved is Reserved (Planned): how long a row waited from its eligible
// time to its start, or to now while pending, as Slurm 22.05's sacct
// prints it (checked live): 00:00:00 for a row never eligible, INVALID for
// one eligible only later (--begin) or ended without starting.
func reserved(r *sacctRow, now time.Time) string {
	if r.eligible.IsZero() {
		return runTime(0)
	}
	end := now
	if t, ok := tsTime(r.StartTime); ok {
		end = t
	} else if _, ended := tsTime(r.EndTime); ended {
		return "INVALID"
	}
	if end.Before(r.eligible) {
		return "INVALID"
	}
	return runTime(end.Sub(r.eligible))
}

// reqMem is ReqMem: memory as Slurm writes it (4000M, 64G), 0 for none;
// also the mem= of TRES strings.
func reqMem(mb int64) string {
	if mb <= 0 {
		return "0"
	}
	unit := 0
	for ; mb%1024 == 0 && unit < 3; unit++ {
		mb /= 1024
	}
	return fmt.Sprintf("%d%c", mb, "MGTP"[unit])
}

// reqTRES is ReqTRES: what the job asked for in all, as AllocTRES writes
// what it holds.
func reqTRES(j *phalanxv1.Job) string {
	s := j.GetSpec()
	nodes := int64(jobNodeCount(j))
	return tresString(reqCPUs(j), nodes*int64(s.GetGpusPerNode()), nodes*s.GetMemoryMb(), nodes)
}

// sacctTRES is AllocTRES: what the row holds; empty when nothing.
func sacctTRES(j *phalanxv1.Job) string {
	if len(j.Alloc) == 0 {
		return ""
	}
	var mem int64
	for _, a := range j.Alloc {
		mem += a.MemoryMb
	}
	return tresString(allocCPUs(j), allocGPUs(j), mem, int64(len(j.Alloc)))
}

// tresString writes TRES as Slurm's records do, by name: billing (the
// CPUs, Slurm's without TRESBillingWeights), cpu, gres/gpu, mem (in the
// largest unit that divides it), node; what is zero left out, but nodes.
func tresString(cpus, gpus, memMB, nodes int64) string {
	var parts []string
	if cpus > 0 {
		parts = append(parts, fmt.Sprintf("billing=%d", cpus), fmt.Sprintf("cpu=%d", cpus))
	}
	if gpus > 0 {
		parts = append(parts, fmt.Sprintf("gres/gpu=%d", gpus))
	}
	if memMB > 0 {
		parts = append(parts, "mem="+reqMem(memMB))
	}
	return strings.Join(append(parts, fmt.Sprintf("node=%d", nodes)), ",")
}
