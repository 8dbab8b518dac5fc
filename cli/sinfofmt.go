package cli

import (
	"errors"
	"slices"
	"strings"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// sinfo's layouts, in -O syntax (sinfo -O takes them as they are):
// Slurm 22.05's, column for column, so that scripts splitting sinfo's
// lines find what Slurm's give them ($NF the node list). The default is
// "%9P %.5a %.10l %.6D %.6t %N"; -N's "%N %.6D %P %6t"; -l's "%9P %.5a
// %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N" and, with -N, "%N %.6D %.9P
// %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E" (memory 8 wide, so that a
// node's MB are not cut); -R's are Slurm's. Phalanx's GPU columns are
// asked for with -O (GPUsFreeTotal, GPUs, GPUsFree, GPUModel), as Slurm's
// own extra fields are.
const (
	SinfoDefaultFormat  = "Partition:9 ,Available:.5 ,Time:.10 ,Nodes:.6 ,StateCompact:.6 ,NodeList:"
	SinfoLongFormat     = "Partition:9 ,Available:.5 ,Time:.10 ,Size:.10 ,Root:.4 ,OverSubscribe:.8 ,Groups:.10 ,Nodes:.6 ,StateLong:.11 ,NodeList:"
	SinfoNodeFormat     = "NodeList:10 ,Nodes:.5 ,Partition:9 ,StateCompact:6"
	SinfoNodeLongFormat = "NodeList:10 ,Nodes:.6 ,Partition:9 ,StateLong:.11 ,CPUs:.4 ,SocketCoreThread:.8 ,Memory:.8 ,Disk:.8 ,Weight:.6 ,Features:.8 ,Reason:20"
	// SinfoGPUFormat: a row per node with its GPUs, total and free, and
	// their model (sinfo -N -O "...").
	SinfoGPUFormat         = "NodeList:10 ,Partition:9 ,StateCompact:6 ,GPUs:.4 ,GPUsFree:.9 ,GPUModel:"
	SinfoReasonsFormat     = "Reason:20 ,User:9 ,TimeStamp:19 ,NodeList:"
	SinfoReasonsLongFormat = "Reason:20 ,UserLong:12 ,TimeStamp:19 ,StateCompact:6 ,NodeList:"
)

// ctimeLayout is how Slurm's commands print the date line of -l (and
// squeue's): C's ctime, "Thu Nov 26 23:50:00 2026".
const ctimeLayout = "Mon Jan _2 15:04:05 2006"

// SinfoView says how sinfo prints: the columns (-o in Slurm's letters or
// -O by name; neither: the layout's own), the layout (-N: a row per node
// and partition; -R: only nodes with a reason; -l: longer), whether rows
// group only nodes whose counts are equal too (-e), the header, and the
// time and zone of dates.
type SinfoView struct {
	Format     string // -o
	LongFormat string // -O
	Node       bool
	Reasons    bool
	Long       bool
	Exact      bool // -e
	NoHeader   bool
	Now        time.Time // -l's first line
	Loc        *time.Location
}

// columns parses the view's format.
func (v *SinfoView) columns() ([]sinfoColumn, error) {
	switch {
	case v.Format != "" && v.LongFormat != "":
		return nil, errors.New("-o and -O both give the columns: use one")
	case v.Format != "":
		return parseSinfoFormat(v.Format)
	case v.LongFormat != "":
		return parseSinfoLong(v.LongFormat)
	}
	return parseSinfoLong(v.layout())
}

// layout is the format of the view's options: -R's (which wins over -N),
// -N's or the default, long or not.
func (v *SinfoView) layout() string {
	switch {
	case v.Reasons && v.Long:
		return SinfoReasonsLongFormat
	case v.Reasons:
		return SinfoReasonsFormat
	case v.Node && v.Long:
		return SinfoNodeLongFormat
	case v.Node:
		return SinfoNodeFormat
	case v.Long:
		return SinfoLongFormat
	}
	return SinfoDefaultFormat
}

// sinfoRow is one printed line: a partition (nil: the nodes are in none)
// and its nodes, alike in every partition and node field printed.
type sinfoRow struct {
	part  *phalanxv1.Partition
	nodes []*phalanxv1.Node
	has   map[string]bool // the names in nodes, while grouping
}

// FormatSinfo prints partitions and nodes as sinfo does. Without -N, nodes
// are grouped as Slurm groups them: one row per distinct set of the
// partition and node fields printed (a row per partition and state by
// default; nodes whose printed NICs differ get rows of their own), rows in
// partition order and then by state (idle, mix, alloc, drng, drain, down).
// Counts (CPUs, memory, weight, ...) split rows only with -e; otherwise a
// row prints its least, "250+".
// -R rows, of the nodes with a reason, come in the order of their first
// node.
func FormatSinfo(parts []*phalanxv1.Partition, nodes []*phalanxv1.Node, v SinfoView) (string, error) {
	cols, err := v.columns()
	if err != nil {
		return "", err
	}
	if v.Loc == nil {
		v.Loc = time.UTC
	}
	var b strings.Builder
	if !v.NoHeader {
		if v.Long {
			b.WriteString(v.Now.In(v.Loc).Format(ctimeLayout) + "\n")
		}
		renderSinfo(&b, cols, func(f *sinfoField) string { return f.header })
	}
	for _, r := range sinfoRows(parts, nodes, cols, v) {
		renderSinfo(&b, cols, func(f *sinfoField) string { return f.value(r, v.Loc) })
	}
	return b.String(), nil
}

// sinfoRows lists what each line prints: a row per node and partition with
// -N, else the groups of sinfoEntries alike in the fields printed.
func sinfoRows(parts []*phalanxv1.Partition, nodes []*phalanxv1.Node, cols []sinfoColumn, v SinfoView) []*sinfoRow {
	entries := sinfoEntries(parts, nodes, v)
	if v.Node && !v.Reasons {
		return entries
	}
	keys := groupKeys(cols, v.Exact)
	byState := slices.ContainsFunc(keys, func(f *sinfoField) bool { return f.name == "StateCompact" || f.name == "StateLong" })
	groups := map[string]*sinfoRow{}
	var rows []*sinfoRow
	for _, e := range entries {
		vals := make([]string, len(keys))
		for i, f := range keys {
			vals[i] = f.value(e, v.Loc)
		}
		k := strings.Join(vals, "\x00")
		r := groups[k]
		if r == nil {
			r = &sinfoRow{part: e.part, has: map[string]bool{}}
			groups[k] = r
			rows = append(rows, r)
		}
		if n := e.nodes[0]; !r.has[n.Name] {
			r.has[n.Name] = true
			r.nodes = append(r.nodes, n)
		}
	}
	if !v.Reasons { // as Slurm's, a partition without nodes has a row too
		for _, p := range parts {
			if !slices.ContainsFunc(entries, func(e *sinfoRow) bool { return e.part == p }) {
				rows = append(rows, &sinfoRow{part: p})
			}
		}
	}
	order := map[*phalanxv1.Partition]int{}
	for i, p := range parts {
		order[p] = i
	}
	slices.SortStableFunc(rows, func(a, b *sinfoRow) int {
		if d := order[a.part] - order[b.part]; d != 0 || !byState || v.Reasons {
			return d
		}
		return compareStates(rowState(a), rowState(b))
	})
	return rows
}

// groupKeys are the fields whose values tell rows apart: those of the
// partition and of each node, and with exact (-e) the counts too.
func groupKeys(cols []sinfoColumn, exact bool) []*sinfoField {
	var keys []*sinfoField
	for _, c := range cols {
		if c.f != nil && c.f.row == nil && (c.f.count == nil || exact) {
			keys = append(keys, c.f)
		}
	}
	return keys
}

// sinfoEntries lists every node with each partition it is in: partition by
// partition (nodes in none left out) by default; node by node (a node in
// none with a nil partition) with -N, and with -R for the nodes with a
// reason.
func sinfoEntries(parts []*phalanxv1.Partition, nodes []*phalanxv1.Node, v SinfoView) []*sinfoRow {
	var out []*sinfoRow
	add := func(p *phalanxv1.Partition, n *phalanxv1.Node) {
		out = append(out, &sinfoRow{part: p, nodes: []*phalanxv1.Node{n}})
	}
	if !v.Node && !v.Reasons {
		byName := make(map[string]*phalanxv1.Node, len(nodes))
		for _, n := range nodes {
			byName[n.Name] = n
		}
		for _, p := range parts {
			for _, name := range p.Nodes {
				if n, ok := byName[name]; ok {
					add(p, n)
				}
			}
		}
		return out
	}
	partByName := make(map[string]*phalanxv1.Partition, len(parts))
	for _, p := range parts {
		partByName[p.Name] = p
	}
	for _, n := range nodes {
		if v.Reasons && n.Reason == "" {
			continue
		}
		if len(n.Partitions) == 0 {
			add(nil, n)
		}
		for _, pn := range n.Partitions {
			p := partByName[pn]
			if p == nil {
				p = &phalanxv1.Partition{Name: pn}
			}
			add(p, n)
		}
	}
	return out
}

// rowState is a row's short state: its first node's, n/a without one.
func rowState(r *sinfoRow) string {
	if len(r.nodes) == 0 {
		return "n/a"
	}
	return ShortNodeState(r.nodes[0].State)
}

// stateOrder is the order of sinfo's rows within a partition.
var stateOrder = []string{"idle", "mix", "alloc", "alloc+", "comp", "drng", "drain", "down", "inval"}

// compareStates orders short states as stateOrder, others after them by
// name.
func compareStates(a, b string) int {
	rank := func(s string) int {
		if i := slices.Index(stateOrder, s); i >= 0 {
			return i
		}
		return len(stateOrder)
	}
	if d := rank(a) - rank(b); d != 0 {
		return d
	}
	if rank(a) == len(stateOrder) {
		return strings.Compare(a, b)
	}
	return 0
}

// notResponding is Slurm's mark after the state of a node whose daemon the
// controller does not hear from: "*".
func notResponding(n *phalanxv1.Node) string {
	if n.NotResponding {
		return "*"
	}
	return ""
}

// ShortNodeState is sinfo's abbreviation of a node state (IDLE → idle,
// MIXED → mix, ...).
func ShortNodeState(s string) string {
	switch s {
	case "MIXED":
		return "mix"
	case "ALLOCATED":
		return "alloc"
	case "ALLOCATED+":
		return "alloc+"
	case "COMPLETING":
		return "comp"
	case "DRAINING":
		return "drng"
	case "DRAINED":
		return "drain"
	}
	return strings.ToLower(s)
}

// freeGPUs counts GPUs a new job could get: none on a down or drained node.
func freeGPUs(n *phalanxv1.Node) int {
	switch n.State {
	case "DOWN", "DRAINED", "DRAINING", "INVAL":
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

// sinfoLimit prints a partition's MaxTime as sinfo's _print_secs does:
// "infinite" when unlimited, else D-HH:MM:SS, H:MM:SS or, under an hour,
// M:SS (30:00).
func sinfoLimit(secs int64) string {
	if secs == 0 {
		return "infinite"
	}
	return cluster.FormatDuration(time.Duration(secs) * time.Second)
}

func nodeNames(nodes []*phalanxv1.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}
