package cli

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// sinfo's columns: Slurm's "%9P %.5a %.10l %.6D %.6t %N" plus the GPUs
// free and total of the row's nodes, last so that Slurm's columns keep
// their positions.
var (
	sinfoFields = []field{
		{verb: 'P', width: 9}, {literal: " "}, {verb: 'a', width: 5, right: true}, {literal: " "},
		{verb: 'l', width: 10, right: true}, {literal: " "}, {verb: 'D', width: 6, right: true}, {literal: " "},
		{verb: 't', width: 6, right: true}, {literal: " "}, {verb: 'N'}, {literal: " "}, {verb: 'G'},
	}
	sinfoNodeFields = []field{
		{verb: 'N', width: 10}, {literal: " "}, {verb: 'D', width: 5, right: true}, {literal: " "},
		{verb: 'P', width: 9}, {literal: " "}, {verb: 't', width: 5, right: true}, {literal: " "},
		{verb: 'c', width: 4, right: true}, {literal: " "}, {verb: 'm', width: 8, right: true}, {literal: " "},
		{verb: 'g', width: 4, right: true}, {literal: " "}, {verb: 'f', width: 9, right: true}, {literal: " "},
		{verb: 'M'},
	}
	sinfoHeaders = map[byte]string{
		'P': "PARTITION", 'a': "AVAIL", 'l': "TIMELIMIT", 'D': "NODES", 't': "STATE", 'N': "NODELIST",
		'G': "GPUS(FREE/TOTAL)", 'c': "CPUS", 'm': "MEMORY", 'g': "GPUS", 'f': "GPUS_FREE", 'M': "GPU_MODEL",
	}
)

// sinfo -R's columns, Slurm's "%20E %9u %19H %N".
var sinfoReasonFields = []field{
	{verb: 'E', width: 20}, {literal: " "}, {verb: 'u', width: 9}, {literal: " "}, {verb: 'H', width: 19}, {literal: " "}, {verb: 'N'},
}

// FormatSinfoReasons prints sinfo -R: the nodes that have a reason (down,
// drained, draining), one row per reason, user and time, nodes as a
// hostlist, rows in the order of their first node.
func FormatSinfoReasons(nodes []*phalanxv1.Node, noHeader bool, loc *time.Location) string {
	type key struct{ reason, user, when string }
	groups := map[key][]string{}
	var order []key
	for _, n := range nodes {
		if n.Reason == "" {
			continue
		}
		k := key{n.Reason, orDefault(n.ReasonUser, "root"), fmtTime(n.ReasonTime, loc, "Unknown")}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], n.Name)
	}
	var b strings.Builder
	if !noHeader {
		render(&b, sinfoReasonFields, func(c byte) string {
			return map[byte]string{'E': "REASON", 'u': "USER", 'H': "TIMESTAMP", 'N': "NODELIST"}[c]
		})
	}
	for _, k := range order {
		render(&b, sinfoReasonFields, func(c byte) string {
			switch c {
			case 'E':
				return k.reason
			case 'u':
				return k.user
			case 'H':
				return k.when
			}
			return hostlist.Compress(groups[k])
		})
	}
	return b.String()
}

// stateOrder is the order of sinfo's rows within a partition.
var stateOrder = []string{"idle", "mix", "alloc", "drng", "drain", "down"}

// ShortNodeState is sinfo's abbreviation of a node state (IDLE → idle,
// MIXED → mix, ...).
func ShortNodeState(s string) string {
	switch s {
	case "MIXED":
		return "mix"
	case "ALLOCATED":
		return "alloc"
	case "DRAINING":
		return "drng"
	case "DRAINED":
		return "drain"
	}
	return strings.ToLower(s)
}

// FormatSinfo prints one row per partition and node state, partitions in
// the order given, the default partition marked with "*".
func FormatSinfo(parts []*phalanxv1.Partition, nodes []*phalanxv1.Node, noHeader bool) string {
	byName := make(map[string]*phalanxv1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var b strings.Builder
	if !noHeader {
		render(&b, sinfoFields, func(c byte) string { return sinfoHeaders[c] })
	}
	for _, p := range parts {
		groups := map[string][]*phalanxv1.Node{}
		for _, name := range p.Nodes {
			if n, ok := byName[name]; ok {
				st := ShortNodeState(n.State)
				groups[st] = append(groups[st], n)
			}
		}
		for _, st := range statesIn(groups) {
			render(&b, sinfoFields, func(c byte) string { return partitionField(p, st, groups[st], c) })
		}
	}
	return b.String()
}

// statesIn lists the states present, known ones first in stateOrder.
func statesIn(groups map[string][]*phalanxv1.Node) []string {
	var out []string
	for _, st := range stateOrder {
		if len(groups[st]) > 0 {
			out = append(out, st)
		}
	}
	var other []string
	for st := range groups {
		if !slices.Contains(stateOrder, st) {
			other = append(other, st)
		}
	}
	sort.Strings(other)
	return append(out, other...)
}

func partitionField(p *phalanxv1.Partition, state string, nodes []*phalanxv1.Node, c byte) string {
	switch c {
	case 'P':
		if p.Default {
			return p.Name + "*"
		}
		return p.Name
	case 'a':
		return partitionAvail(p.State)
	case 'l':
		return sinfoLimit(p.MaxTimeSeconds)
	case 'D':
		return fmt.Sprint(len(nodes))
	case 't':
		return state
	case 'N':
		return hostlist.Compress(nodeNames(nodes))
	case 'G':
		free, total := 0, 0
		for _, n := range nodes {
			total += int(n.Gpus)
			free += freeGPUs(n)
		}
		return fmt.Sprintf("%d/%d", free, total)
	}
	return ""
}

// FormatSinfoNodes prints sinfo -N: one row per node and partition.
func FormatSinfoNodes(parts []*phalanxv1.Partition, nodes []*phalanxv1.Node, noHeader bool) string {
	defaults := map[string]bool{}
	for _, p := range parts {
		defaults[p.Name] = p.Default
	}
	var b strings.Builder
	if !noHeader {
		render(&b, sinfoNodeFields, func(c byte) string { return sinfoHeaders[c] })
	}
	for _, n := range nodes {
		partNames := n.Partitions
		if len(partNames) == 0 {
			partNames = []string{"n/a"}
		}
		for _, pn := range partNames {
			if defaults[pn] {
				pn += "*"
			}
			render(&b, sinfoNodeFields, func(c byte) string { return nodeField(n, pn, c) })
		}
	}
	return b.String()
}

func nodeField(n *phalanxv1.Node, part string, c byte) string {
	switch c {
	case 'N':
		return n.Name
	case 'D':
		return "1"
	case 'P':
		return part
	case 't':
		return ShortNodeState(n.State)
	case 'c':
		return fmt.Sprint(n.Cpus)
	case 'm':
		return fmt.Sprint(n.MemoryMb)
	case 'g':
		return fmt.Sprint(n.Gpus)
	case 'f':
		return fmt.Sprint(freeGPUs(n))
	case 'M':
		return orDefault(n.GpuModel, "-")
	}
	return ""
}

// freeGPUs counts GPUs a new job could get: none on a down or drained node.
func freeGPUs(n *phalanxv1.Node) int {
	switch n.State {
	case "DOWN", "DRAINED", "DRAINING":
		return 0
	}
	return int(max(n.Gpus-n.GpusUsed, 0))
}

func partitionAvail(state string) string {
	if state == "INACTIVE" {
		return "inact"
	}
	return strings.ToLower(orDefault(state, "up"))
}

// sinfoLimit prints a partition's MaxTime as sinfo does: "infinite" when
// unlimited.
func sinfoLimit(secs int64) string {
	if secs == 0 {
		return "infinite"
	}
	return slurmTime(time.Duration(secs) * time.Second)
}

func nodeNames(nodes []*phalanxv1.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}
