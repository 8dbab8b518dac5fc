package cli

import (
	"cmp"
	"math"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// squeue's row order, as Slurm 22.05's squeue (src/squeue/sort.c) gives it.
//
// squeue sorts the records the controller sent, in the controller's order
// (Phalanx's: by job ID), first by start time, latest first, and then by
// each field of -S, the last field first: each sort keeps the order of the
// records it finds equal, so the first field decides, the next breaks its
// ties, and so on. -S is "P,t,-p" by default (partition, then compact state
// as a string, so CF, CG, PD, R; then priority, highest first), "S" with
// --start. A record is a job, or the pending tasks of an array, which sort
// as one even when -r prints them a row each.
//
// Two of sort.c's comparisons are not orders: a job without a start time
// is greater than any job, itself included, and so is a job without nodes
// for N. What they give is what the sort that runs them makes of it:
// Slurm's list_sort hands its records to glibc's qsort, a merge sort
// (mergeSort), which puts such jobs after the others, in the reverse of the
// order it found them in. So, in the default order, pending jobs of equal
// priority that have no expected start come newest first.

// noTask is Slurm's NO_VAL: the task index of a job that is not an array
// task, or of an array's record of several pending tasks, which -S i puts
// after the array's started tasks.
const noTask = 0xfffffffe

// squeueRec is one record of squeue's list.
type squeueRec struct {
	rows []*phalanxv1.Job // what it prints; the first is the job the sort looks at
	base uint64           // -S i: the job's ID, or its array's
	task int64            // the task's index, or noTask
}

func (r *squeueRec) job() *phalanxv1.Job { return r.rows[0] }

// sortKey is a field of -S: a letter of squeue's format, and whether a
// "-" before it reverses its order.
type sortKey struct {
	field byte
	desc  bool
}

// Sort orders of squeue.
const (
	squeueDefaultSort = "P,t,-p"
	squeueStartSort   = "S"
)

// squeueSortBy are the -S letters that order jobs by data Phalanx has,
// but for S (byStart, which applies "-" itself). Slurm's others are
// accepted: c, f, h, n and O sort nothing there either;
// d (temporary disk), H, I, J and z (sockets, cores, threads) and v
// (reservation) are the same for every Phalanx job, as "cluster" is.
var squeueSortBy = map[byte]func(a, b *squeueRec, now time.Time) int{
	'B': byString(func(j *phalanxv1.Job) string { // its batch host; none: ""
		if len(j.Alloc) > 0 {
			return j.Alloc[0].Node
		}
		return ""
	}),
	'C': byInt(func(j *phalanxv1.Job) int64 { return max(jobCPUs(j), int64(jobNodeCount(j))) }),
	'D': byInt(func(j *phalanxv1.Job) int64 { return int64(jobNodeCount(j)) }),
	'e': byInt(func(j *phalanxv1.Job) int64 { return unixOrZero(endAt(j)) }),
	'g': byString(func(j *phalanxv1.Job) string { return groupName(j.GetSpec().GetGid()) }),
	'G': byInt(func(j *phalanxv1.Job) int64 { return int64(j.GetSpec().GetGid()) }),
	'i': func(a, b *squeueRec, _ time.Time) int {
		if a.base != b.base {
			return cmp.Compare(a.base, b.base)
		}
		return cmp.Compare(a.task, b.task)
	},
	'j': byString(func(j *phalanxv1.Job) string { return j.GetSpec().GetName() }),
	'l': byInt(func(j *phalanxv1.Job) int64 { return limitOrInfinite(j) }),
	'L': func(a, b *squeueRec, now time.Time) int {
		left := func(j *phalanxv1.Job) int64 {
			if jobLimit(j) == 0 {
				return math.MaxUint32 // Slurm's INFINITE
			}
			return int64((jobLimit(j) - elapsed(j, now)) / time.Second)
		}
		return cmp.Compare(left(a.job()), left(b.job()))
	},
	'm': byInt(func(j *phalanxv1.Job) int64 { return j.GetSpec().GetMemoryMb() }),
	'M': func(a, b *squeueRec, now time.Time) int {
		return cmp.Compare(elapsed(a.job(), now), elapsed(b.job(), now))
	},
	'N': func(a, b *squeueRec, _ time.Time) int { // the first node; none: greater than any
		x, y := firstNode(a.job()), firstNode(b.job())
		switch {
		case x == "":
			return 1
		case y == "":
			return -1
		case hostlist.Less(x, y):
			return -1
		case hostlist.Less(y, x):
			return 1
		}
		return 0
	},
	'p': byPriority, 'Q': byPriority,
	'P': byString(func(j *phalanxv1.Job) string { return j.GetSpec().GetPartition() }),
	't': byString(func(j *phalanxv1.Job) string { return cluster.JobState(shownState(j)).Short() }),
	'T': byString(func(j *phalanxv1.Job) string { return shownState(j) }),
	'u': byString(func(j *phalanxv1.Job) string { return j.GetSpec().GetUser() }),
	'U': byInt(func(j *phalanxv1.Job) int64 { return int64(j.GetSpec().GetUid()) }),
	'V': byInt(func(j *phalanxv1.Job) int64 { return unixOrZero(j.SubmitTime) }),
}

// squeueSortsNothing are the -S letters Slurm accepts that change no
// order here (see squeueSortBy).
const squeueSortsNothing = "cdfhnvzHIJO"

var byPriority = byInt(func(j *phalanxv1.Job) int64 { return j.GetPriority() })

func byString(f func(*phalanxv1.Job) string) func(a, b *squeueRec, _ time.Time) int {
	return func(a, b *squeueRec, _ time.Time) int { return strings.Compare(f(a.job()), f(b.job())) }
}

func byInt(f func(*phalanxv1.Job) int64) func(a, b *squeueRec, _ time.Time) int {
	return func(a, b *squeueRec, _ time.Time) int { return cmp.Compare(f(a.job()), f(b.job())) }
}

// unixOrZero is ts in seconds, 0 (Slurm's none) for none.
func unixOrZero(ts *timestamppb.Timestamp) int64 {
	if ts == nil {
		return 0
	}
	return ts.AsTime().Unix()
}

// limitOrInfinite is the time limit, in seconds; none is Slurm's INFINITE
// minutes, longer than any.
func limitOrInfinite(j *phalanxv1.Job) int64 {
	if l := jobLimit(j); l > 0 {
		return int64(l / time.Second)
	}
	return math.MaxUint32 * 60
}

// firstNode is the job's first node in hostlist order, "" for none.
func firstNode(j *phalanxv1.Job) string {
	first := ""
	for _, a := range j.Alloc {
		if first == "" || hostlist.Less(a.Node, first) {
			first = a.Node
		}
	}
	return first
}

// parseSqueueSort reads -S as Slurm's squeue does, from its last character
// to its first: commas and "+" are skipped, a "-" reverses the field after
// it, "cluster" (any case) is a field. It returns the fields in the order
// they are to be sorted by (the last first) and the notes Slurm prints on
// the way ("Invalid sort specification: b", a vestige it skips); a letter
// squeue does not sort by is Slurm's error, which names the last such
// letter.
func parseSqueueSort(spec string) (keys []sortKey, notes []string, err error) {
	const word = "cluster"
	for i := len(spec) - 1; i >= 0; i-- {
		c := spec[i]
		if c == ',' || c == '+' || c == '-' {
			continue
		}
		desc := i > 0 && spec[i-1] == '-'
		if start := i + 1 - len(word); start >= 0 && strings.EqualFold(spec[start:i+1], word) {
			i = start // one cluster: every job is in it
			continue
		}
		_, known := squeueSortBy[c]
		switch {
		case c == 'S': // by byStart, which takes the direction itself
			keys = append(keys, sortKey{field: c, desc: desc})
		case known:
			keys = append(keys, sortKey{field: c, desc: desc})
		case c == 'b':
			notes = append(notes, "squeue: Invalid sort specification: b")
		case strings.IndexByte(squeueSortsNothing, c) < 0:
			return nil, notes, &rawError{msg: "squeue: error: Invalid sort specification: " + string(c)}
		}
	}
	return keys, notes, nil
}

// checkSqueueSort checks -S before squeue asks the controller: the notes
// to print, or Slurm's error after the notes it prints before it.
func checkSqueueSort(spec string) ([]string, error) {
	_, notes, err := parseSqueueSort(spec)
	if err != nil {
		return nil, &rawError{msg: strings.Join(append(notes, err.Error()), "\n")}
	}
	return notes, nil
}

// sortRecords puts recs in squeue's order (see the top of this file) for
// keys from parseSqueueSort, at now.
func sortRecords(recs []*squeueRec, keys []sortKey, now time.Time) {
	tmp := make([]*squeueRec, len(recs))
	// Slurm sorts by start time before its clock is read: with no "now"
	// to bring a past expected start of a pending job up to.
	mergeSort(recs, tmp, func(a, b *squeueRec) int { return byStart(a, b, true, time.Time{}) })
	for _, k := range keys {
		if k.field == 'S' {
			mergeSort(recs, tmp, func(a, b *squeueRec) int { return byStart(a, b, k.desc, now) })
			continue
		}
		by := squeueSortBy[k.field]
		mergeSort(recs, tmp, func(a, b *squeueRec) int {
			if k.desc {
				return -by(a, b, now)
			}
			return by(a, b, now)
		})
	}
}

// byStart is sort.c's start time comparison: the time %S shows, a pending
// job's expected start taken as now once past (unless now is zero); a job
// without one is greater than any other, itself included, whatever the
// direction.
func byStart(a, b *squeueRec, desc bool, now time.Time) int {
	at := func(j *phalanxv1.Job) int64 {
		t := unixOrZero(shownStart(j))
		if t != 0 && !now.IsZero() && j.State == string(cluster.JobPending) && t < now.Unix() {
			t = now.Unix()
		}
		return t
	}
	x, y := at(a.job()), at(b.job())
	switch {
	case x == 0:
		return 1
	case y == 0:
		return -1
	}
	d := cmp.Compare(x, y)
	if desc {
		d = -d
	}
	return d
}

// mergeSort sorts recs as Slurm's list_sort does on Linux, by glibc's
// qsort: a top-down merge sort (n/2 records on the left) that takes the
// left record unless cmp says it is greater. Stable; for comparisons that
// are not orders (see byStart), it is this algorithm that decides. tmp is
// as long as recs.
func mergeSort(recs, tmp []*squeueRec, cmp func(a, b *squeueRec) int) {
	if len(recs) <= 1 {
		return
	}
	n1 := len(recs) / 2
	left, right := recs[:n1], recs[n1:]
	mergeSort(left, tmp, cmp)
	mergeSort(right, tmp, cmp)
	out := tmp[:0]
	for len(left) > 0 && len(right) > 0 {
		if cmp(left[0], right[0]) <= 0 {
			out, left = append(out, left[0]), left[1:]
		} else {
			out, right = append(out, right[0]), right[1:]
		}
	}
	out = append(out, left...) // what is left of the right run is in place
	copy(recs, out)
}
