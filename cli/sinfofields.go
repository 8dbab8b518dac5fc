package cli

import (
	"fmt"
	"os/user"
	"slices"
	"strings"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// sinfoField is a column sinfo can print: its -O name, its -o letter (0:
// none; Slurm has used most letters, so Phalanx's own fields are -O only
// but for the NICs' %k and %K, letters Slurm leaves free), its header and
// its value, which comes from exactly one of:
//
//   - part: the row's partition ("n/a" for nodes in none);
//   - node: each node of the row. Rows split where a printed node field
//     differs, so every node of a row has the same value;
//   - count: a number of each node (CPUs, memory, weight, ...), and more
//     after it with ":" between (S:C:T). As in Slurm, nodes whose counts
//     differ share a row unless -e (exact) is given; the row prints the
//     least of each, with "+" when a node has more ("250+");
//   - row: the row's nodes together (count, hostlist, sums).
type sinfoField struct {
	name   string
	letter byte
	header string
	doc    string
	part   func(p *phalanxv1.Partition) string
	node   func(n *phalanxv1.Node, loc *time.Location) string
	count  func(n *phalanxv1.Node) int64
	more   []func(n *phalanxv1.Node) int64
	row    func(nodes []*phalanxv1.Node) string
}

// sinfoFields are the fields, Slurm's first in the order of its -O names,
// then Phalanx's.
var sinfoFields = []sinfoField{
	{name: "AllocMem", header: "ALLOCMEM", doc: "memory allocated to jobs, MB",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return fmt.Sprint(n.MemoryUsedMb) }},
	{name: "Available", letter: 'a', header: "AVAIL", doc: "partition state: up, down, drain, inact",
		part: func(p *phalanxv1.Partition) string { return partitionAvail(p.State) }},
	{name: "Cores", letter: 'Y', header: "CORES", doc: "cores per socket: its NodeName line's CoresPerSocket, else 1",
		count: cores},
	{name: "CPUs", letter: 'c', header: "CPUS", doc: "CPUs per node; MIN+ for a row of nodes that differ (-e: a row each)",
		count: func(n *phalanxv1.Node) int64 { return int64(n.Cpus) }},
	{name: "CPUsState", letter: 'C', header: "CPUS(A/I/O/T)", doc: "CPUs allocated/idle/other (down, drained)/total",
		row: cpusState},
	{name: "DefaultTime", letter: 'L', header: "DEFAULTTIME", doc: "a job's default time limit, n/a when it is MaxTime",
		part: func(p *phalanxv1.Partition) string {
			if p.DefaultTimeSeconds == 0 {
				return "n/a"
			}
			return sinfoLimit(p.DefaultTimeSeconds)
		}},
	{name: "Disk", letter: 'd', header: "TMP_DISK", doc: "temporary disk, MB: 0 (Phalanx does not track it)",
		count: func(*phalanxv1.Node) int64 { return 0 }},
	{name: "Features", letter: 'f', header: "AVAIL_FEATURES", doc: "node features",
		node: func(n *phalanxv1.Node, _ *time.Location) string {
			return orDefault(strings.Join(n.Features, ","), "(null)")
		}},
	{name: "Gres", letter: 'G', header: "GRES", doc: "GPUs as gres: gpu:MODEL:COUNT",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return gres(n, n.Gpus) }},
	{name: "GresUsed", header: "GRES_USED", doc: "GPUs in use as gres",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return gres(n, n.GpusUsed) }},
	{name: "Groups", letter: 'g', header: "GROUPS", doc: "partition's AllowGroups, all when any group may use it",
		part: func(p *phalanxv1.Partition) string { return orDefault(strings.Join(p.AllowGroups, ","), "all") }},
	{name: "Memory", letter: 'm', header: "MEMORY", doc: "memory per node, MB; MIN+ as CPUs",
		count: func(n *phalanxv1.Node) int64 { return n.MemoryMb }},
	{name: "NodeAI", letter: 'A', header: "NODES(A/I)", doc: "nodes allocated (or mixed)/idle", row: func(nodes []*phalanxv1.Node) string {
		a, i, _ := nodesByState(nodes)
		return fmt.Sprintf("%d/%d", a, i)
	}},
	{name: "NodeAIOT", letter: 'F', header: "NODES(A/I/O/T)", doc: "nodes allocated/idle/other/total", row: func(nodes []*phalanxv1.Node) string {
		a, i, o := nodesByState(nodes)
		return fmt.Sprintf("%d/%d/%d/%d", a, i, o, len(nodes))
	}},
	{name: "NodeHost", letter: 'n', header: "HOSTNAMES", doc: "node host names, as a hostlist",
		row: func(nodes []*phalanxv1.Node) string { return hostlist.Compress(nodeNames(nodes)) }},
	{name: "NodeList", letter: 'N', header: "NODELIST", doc: "node names, as a hostlist",
		row: func(nodes []*phalanxv1.Node) string { return hostlist.Compress(nodeNames(nodes)) }},
	{name: "Nodes", letter: 'D', header: "NODES", doc: "number of nodes",
		row: func(nodes []*phalanxv1.Node) string { return fmt.Sprint(len(nodes)) }},
	{name: "OverSubscribe", letter: 'h', header: "OVERSUBSCRIBE", doc: "partition's OverSubscribe: NO, or EXCLUSIVE (whole nodes)",
		part: func(p *phalanxv1.Partition) string {
			return map[bool]string{true: "EXCLUSIVE", false: "NO"}[p.Exclusive]
		}},
	{name: "Partition", letter: 'P', header: "PARTITION", doc: "partition, * for the default",
		part: func(p *phalanxv1.Partition) string {
			if p.Default {
				return p.Name + "*"
			}
			return p.Name
		}},
	{name: "PartitionName", letter: 'R', header: "PARTITION", doc: "partition",
		part: func(p *phalanxv1.Partition) string { return p.Name }},
	{name: "PreemptMode", letter: 'M', header: "PREEMPT_MODE", doc: "partition's preemption mode",
		part: func(p *phalanxv1.Partition) string { return orDefault(p.PreemptMode, "OFF") }},
	{name: "PriorityTier", letter: 'p', header: "PRIO_TIER", doc: "partition's priority tier",
		part: func(p *phalanxv1.Partition) string { return fmt.Sprint(p.PriorityTier) }},
	{name: "Reason", letter: 'E', header: "REASON", doc: "why the node is down or drained, none without a reason",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return orDefault(n.Reason, "none") }},
	{name: "Root", letter: 'r', header: "ROOT", doc: "partition only for root: no (Phalanx has no RootOnly)",
		part: func(*phalanxv1.Partition) string { return "no" }},
	{name: "Size", letter: 's', header: "JOB_SIZE", doc: "nodes a job may have: MinNodes (at least 1)-MaxNodes",
		part: func(p *phalanxv1.Partition) string {
			least := max(p.MinNodes, 1)
			switch {
			case p.MaxNodes == 0:
				return fmt.Sprintf("%d-infinite", least)
			case p.MaxNodes == least:
				return fmt.Sprint(least)
			}
			return fmt.Sprintf("%d-%d", least, p.MaxNodes)
		}},
	{name: "SocketCoreThread", letter: 'z', header: "S:C:T", doc: "sockets:cores:threads from its NodeName line; CPUS:1:1 without (what Slurm infers from CPUs alone)",
		count: sockets, more: []func(*phalanxv1.Node) int64{cores, threads}},
	{name: "Sockets", letter: 'X', header: "SOCKETS", doc: "sockets per node: its NodeName line's, else CPUS/(cores*threads) as Slurm infers",
		count: sockets},
	{name: "StateCompact", letter: 't', header: "STATE", doc: "idle, mix, alloc, drng, drain, down, inval; * after it: not responding",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return ShortNodeState(n.State) + notResponding(n) }},
	{name: "StateLong", letter: 'T', header: "STATE", doc: "idle, mixed, allocated, draining, drained, down, inval; * after it: not responding",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return strings.ToLower(n.State) + notResponding(n) }},
	{name: "Threads", letter: 'Z', header: "THREADS", doc: "threads per core: its NodeName line's ThreadsPerCore, else 1",
		count: threads},
	{name: "Time", letter: 'l', header: "TIMELIMIT", doc: "partition's MaxTime, infinite when unlimited",
		part: func(p *phalanxv1.Partition) string { return sinfoLimit(p.MaxTimeSeconds) }},
	{name: "TimeStamp", letter: 'H', header: "TIMESTAMP", doc: "when the reason was set, Unknown without one",
		node: func(n *phalanxv1.Node, loc *time.Location) string { return fmtTime(n.ReasonTime, loc, "Unknown") }},
	{name: "User", letter: 'u', header: "USER", doc: "who set the reason (phalanx: the health checks), Unknown without one",
		node: func(n *phalanxv1.Node, _ *time.Location) string {
			if n.Reason == "" {
				return "Unknown"
			}
			return orDefault(n.ReasonUser, "root")
		}},
	{name: "UserLong", letter: 'U', header: "USER", doc: "who set the reason, as name(uid), Unknown without one",
		node: func(n *phalanxv1.Node, _ *time.Location) string {
			if n.Reason == "" {
				return "Unknown"
			}
			return userWithID(orDefault(n.ReasonUser, "root"))
		}},
	{name: "Weight", letter: 'w', header: "WEIGHT", doc: "scheduling weight, lower first; 1 when not set, as Slurm's; MIN+ as CPUs",
		count: func(n *phalanxv1.Node) int64 { return int64(nodeWeight(n)) }},

	{name: "GPUs", header: "GPUS", doc: "Phalanx: GPUs per node",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return fmt.Sprint(n.Gpus) }},
	{name: "GPUsFree", header: "GPUS_FREE", doc: "Phalanx: GPUs a new job could get (none on a drained or down node)",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return fmt.Sprint(freeGPUs(n)) }},
	{name: "GPUsFreeTotal", header: "GPUS(FREE/TOTAL)", doc: "Phalanx: the row's GPUs, free/total", row: func(nodes []*phalanxv1.Node) string {
		free, total := 0, 0
		for _, n := range nodes {
			total += int(n.Gpus)
			free += freeGPUs(n)
		}
		return fmt.Sprintf("%d/%d", free, total)
	}},
	{name: "GPUModel", header: "GPU_MODEL", doc: "Phalanx: GPU model, - without GPUs",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return orDefault(n.GpuModel, "-") }},
	{name: "NICs", letter: 'k', header: "NICS", doc: "Phalanx: RDMA ports, DEV/PORT:STATE:RATE:LINK,... (LINK: IB or Eth)",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return sinfoNICs(n.Nics) }},
	{name: "NICCount", header: "NIC_COUNT", doc: "Phalanx: number of RDMA ports",
		node: func(n *phalanxv1.Node, _ *time.Location) string { return fmt.Sprint(len(n.Nics)) }},
	{name: "NICsUp", letter: 'K', header: "NICS(UP/TOTAL)", doc: "Phalanx: RDMA ports up (ACTIVE and LinkUp)/total",
		node: func(n *phalanxv1.Node, _ *time.Location) string {
			up := 0
			for _, nic := range n.Nics {
				if nicUp(nic) {
					up++
				}
			}
			return fmt.Sprintf("%d/%d", up, len(n.Nics))
		}},
}

// value is the field's value in row r.
func (f *sinfoField) value(r *sinfoRow, loc *time.Location) string {
	switch {
	case f.part != nil && r.part == nil:
		return "n/a"
	case f.part != nil:
		return f.part(r.part)
	case len(r.nodes) == 0 && f.row == nil: // a partition without nodes
		return map[bool]string{true: "0", false: "n/a"}[f.count != nil]
	case f.node != nil:
		return f.node(r.nodes[0], loc)
	case f.count != nil:
		out := leastPlus(r.nodes, f.count)
		for _, c := range f.more {
			out += ":" + leastPlus(r.nodes, c)
		}
		return out
	}
	return f.row(r.nodes)
}

// leastPlus prints a count of a row's nodes as Slurm's sinfo does: the
// least, with "+" after it when some node has more.
func leastPlus(nodes []*phalanxv1.Node, count func(*phalanxv1.Node) int64) string {
	least, most := count(nodes[0]), count(nodes[0])
	for _, n := range nodes[1:] {
		c := count(n)
		least, most = min(least, c), max(most, c)
	}
	if most > least {
		return fmt.Sprintf("%d+", least)
	}
	return fmt.Sprint(least)
}

// cores, threads and sockets are a node's layout as Slurm shows it: its
// NodeName line's CoresPerSocket and ThreadsPerCore, 1 when the line
// leaves them out; its Sockets, else what its CPUs make of those (CPUS:1:1
// for a line without any).
func cores(n *phalanxv1.Node) int64   { return int64(max(n.CoresPerSocket, 1)) }
func threads(n *phalanxv1.Node) int64 { return int64(max(n.ThreadsPerCore, 1)) }
func sockets(n *phalanxv1.Node) int64 {
	if n.Sockets > 0 {
		return int64(n.Sockets)
	}
	return int64(n.Cpus) / (cores(n) * threads(n))
}

// nodeWeight is a node's Weight as Slurm prints it: a node no NodeName
// line configures (it joined as its agent registered) has 0, printed as
// Slurm's default, 1, which a NodeName line without Weight gives.
func nodeWeight(n *phalanxv1.Node) int32 {
	if n.Weight == 0 {
		return 1
	}
	return n.Weight
}

// sinfoColumn is a field with its width (0: as wide as the value; a wider
// value is cut, as Slurm cuts it), or literal text when f is nil.
type sinfoColumn struct {
	f     *sinfoField
	text  string
	width int
	right bool
}

// parseSinfoFormat reads -o: Slurm's "%[.][WIDTH]LETTER" between literal
// text.
func parseSinfoFormat(format string) ([]sinfoColumn, error) {
	byLetter := map[byte]*sinfoField{}
	for i := range sinfoFields {
		if f := &sinfoFields[i]; f.letter != 0 {
			byLetter[f.letter] = f
		}
	}
	var bad byte
	fields, err := parseFormat(format, func(c byte) bool {
		if byLetter[c] == nil {
			bad = c
		}
		return byLetter[c] != nil
	})
	if bad != 0 {
		return nil, fmt.Errorf("--format: invalid field %%%c: the fields are %s; -O names them all (sinfo --help)", bad, sinfoLetters())
	}
	if err != nil {
		return nil, fmt.Errorf("--format: %w", err)
	}
	cols := make([]sinfoColumn, len(fields))
	for i, f := range fields {
		cols[i] = sinfoColumn{f: byLetter[f.verb], text: f.literal, width: f.width, right: f.right}
	}
	return cols, nil
}

// parseSinfoLong reads -O: comma-separated NAME[:[.][WIDTH][SUFFIX]], names
// in any case. Without a colon a field is 20 wide; with one and no width,
// as wide as its value. "." aligns right; the suffix is printed after the
// field (Slurm puts nothing between -O fields).
func parseSinfoLong(format string) ([]sinfoColumn, error) {
	var cols []sinfoColumn
	for _, tok := range strings.Split(format, ",") {
		name, spec, hasSpec := strings.Cut(tok, ":")
		if name = strings.TrimSpace(name); name == "" && !hasSpec {
			continue
		}
		f := sinfoLookup(name)
		if f == nil {
			return nil, fmt.Errorf("--Format: invalid field %q: the fields are %s", name, sinfoNames())
		}
		c := sinfoColumn{f: f, width: 20}
		if hasSpec {
			spec, c.right = strings.CutPrefix(spec, ".")
			digits := len(spec) - len(strings.TrimLeft(spec, "0123456789"))
			if c.right && digits == 0 {
				return nil, fmt.Errorf("--Format: %q: a right-aligned field needs a width (NAME:.WIDTH)", tok)
			}
			w, err := fieldWidth(spec[:digits])
			if err != nil {
				return nil, fmt.Errorf("--Format: %q: %w", tok, err)
			}
			c.width, spec = w, spec[digits:]
		}
		cols = append(cols, c)
		if spec != "" {
			cols = append(cols, sinfoColumn{text: spec})
		}
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("--Format: no fields: write NAME[:[.][WIDTH][SUFFIX]],... (the fields are %s)", sinfoNames())
	}
	return cols, nil
}

func sinfoLookup(name string) *sinfoField {
	for i := range sinfoFields {
		if strings.EqualFold(sinfoFields[i].name, name) {
			return &sinfoFields[i]
		}
	}
	return nil
}

// sinfoNames lists the -O names: "AllocMem, Available, ...".
func sinfoNames() string {
	names := make([]string, len(sinfoFields))
	for i, f := range sinfoFields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// sinfoLetters lists the -o letters as Slurm's manual does: "%a %A %c ...".
func sinfoLetters() string {
	var out []string
	for c := byte('a'); c <= 'z'; c++ {
		for _, l := range []byte{c, c - 'a' + 'A'} {
			if slices.ContainsFunc(sinfoFields, func(f sinfoField) bool { return f.letter == l }) {
				out = append(out, "%"+string(l))
			}
		}
	}
	return strings.Join(out, " ")
}

// sinfoFieldHelp is the field list of sinfo --help: letter, name, header,
// meaning.
func sinfoFieldHelp() string {
	var b strings.Builder
	b.WriteString("\nFields (-o %LETTER, -O NAME):\n")
	for _, f := range sinfoFields {
		letter := "  "
		if f.letter != 0 {
			letter = "%" + string(f.letter)
		}
		fmt.Fprintf(&b, "  %s  %-16s %-17s %s\n", letter, f.name, f.header, f.doc)
	}
	return b.String()
}

// renderSinfo writes one line: each column's value padded and cut to its
// width.
func renderSinfo(b *strings.Builder, cols []sinfoColumn, value func(*sinfoField) string) {
	var line strings.Builder
	for _, c := range cols {
		if c.f == nil {
			line.WriteString(c.text)
			continue
		}
		line.WriteString(pad(value(c.f), c.width, c.right))
	}
	b.WriteString(strings.TrimRight(line.String(), " "))
	b.WriteByte('\n')
}

// sinfoNICs prints a node's RDMA ports in one short column:
// "mlx5_0/1:ACTIVE:200Gb:IB,mlx5_1/1:DOWN:200Gb:IB"; "(null)" without any.
// scontrol show node has the rest (GPU affinity, netdev).
func sinfoNICs(nics []*phalanxv1.NICInfo) string {
	if len(nics) == 0 {
		return "(null)"
	}
	out := make([]string, len(nics))
	for i, n := range nics {
		out[i] = fmt.Sprintf("%s/%d:%s:%s:%s", n.Device, n.Port, orDefault(n.State, "?"),
			strings.TrimSuffix(shortRate(n.Rate), "/s"), shortLinkLayer(n.LinkLayer))
	}
	return strings.Join(out, ",")
}

func shortLinkLayer(l string) string {
	switch l {
	case "InfiniBand":
		return "IB"
	case "Ethernet":
		return "Eth"
	}
	return orDefault(strings.ReplaceAll(l, " ", "_"), "?")
}

// nicUp reports whether a port carries traffic, as the agent's rdma-link
// check has it: ACTIVE and physically LinkUp (an agent that does not
// report the physical state is taken at its logical one).
func nicUp(n *phalanxv1.NICInfo) bool {
	return n.State == "ACTIVE" && (n.PhysState == "" || n.PhysState == "LinkUp")
}

// nodesByState counts nodes as Slurm's %A and %F do: allocated (or mixed),
// idle, and other (drained, draining, down, ...).
func nodesByState(nodes []*phalanxv1.Node) (alloc, idle, other int) {
	for _, n := range nodes {
		switch n.State {
		case "ALLOCATED", "ALLOCATED+", "MIXED", "COMPLETING":
			alloc++
		case "IDLE":
			idle++
		default:
			other++
		}
	}
	return alloc, idle, other
}

// cpusState is Slurm's %C: CPUs allocated/idle/other/total, where the CPUs
// of a drained, draining or down node that no job holds are other.
func cpusState(nodes []*phalanxv1.Node) string {
	var alloc, idle, other, total int32
	for _, n := range nodes {
		used := min(n.CpusUsed, n.Cpus)
		total += n.Cpus
		alloc += used
		switch n.State {
		case "DOWN", "DRAINED", "DRAINING", "FUTURE", "INVAL":
			other += n.Cpus - used
		default:
			idle += n.Cpus - used
		}
	}
	return fmt.Sprintf("%d/%d/%d/%d", alloc, idle, other, total)
}

// userWithID is a user as Slurm's sinfo %U prints one: name(uid), the UID
// as this host knows the name ("?" when it does not).
func userWithID(name string) string {
	uid := "?"
	if u, err := lookupUserName(name); err == nil {
		uid = u.Uid
	}
	return name + "(" + uid + ")"
}

// lookupUserName finds a user by name; tests replace it.
var lookupUserName = user.Lookup
