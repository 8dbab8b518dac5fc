package cli

import (
	"fmt"
	"strings"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// FormatNode prints a node as "scontrol show node" does.
func FormatNode(n *phalanxv1.Node, loc *time.Location) string {
	features := orDefault(strings.Join(n.Features, ","), "(null)")
	var b strings.Builder
	// Slurm 22.05's lines, less its power and energy ones; what Phalanx
	// does not measure (load, free memory, boot time) as Slurm shows it
	// unknown. Phalanx's own (Switch, times, NICs) follow.
	kvLines(&b, [][]string{
		{kv("NodeName", n.Name), kv("CoresPerSocket", cores(n))},
		{kv("CPUAlloc", n.CpusUsed), kv("CPUEfctv", n.Cpus), kv("CPUTot", n.Cpus), kv("CPULoad", "N/A")},
		{kv("AvailableFeatures", features)},
		{kv("ActiveFeatures", features)},
		{kv("Gres", gres(n, n.Gpus)), kv("GresUsed", gres(n, n.GpusUsed))},
		{kv("NodeAddr", n.Addr), kv("NodeHostName", n.Name)},
		{kv("RealMemory", n.MemoryMb), kv("AllocMem", n.MemoryUsedMb), kv("FreeMem", "N/A"), kv("Sockets", sockets(n)), kv("Boards", 1)},
		{kv("State", n.State+notResponding(n)), kv("ThreadsPerCore", threads(n)), kv("TmpDisk", 0), kv("Weight", nodeWeight(n)),
			kv("Owner", "N/A"), kv("MCS_label", "N/A")},
		{kv("Partitions", orDefault(strings.Join(n.Partitions, ","), "(null)"))},
		{kv("BootTime", "None"), kv("SlurmdStartTime", fmtTime(n.Registered, loc, "None"))},
		{kv("CfgTRES", nodeTRES(n.Cpus, n.MemoryMb, n.Gpus, true))},
		{kv("AllocTRES", nodeTRES(n.CpusUsed, n.MemoryUsedMb, n.GpusUsed, false))},
		{kv("Switch", orDefault(n.Leaf, "(null)"))},
		{kv("RegisterTime", fmtTime(n.Registered, loc, "None")), kv("LastHeartbeat", fmtTime(n.LastHeartbeat, loc, "None"))},
		{kv("NICs", nicList(n.Nics))},
		{kv("Reason", nodeReason(n, loc))},
	})
	return b.String()
}

// nodeTRES is a node's CfgTRES (cfg) or AllocTRES as Slurm writes them:
// "cpu=4,mem=1000M,billing=4" (billing, the CPUs, only configured), the
// GPUs as gres/gpu=N; empty for nothing allocated.
func nodeTRES(cpus int32, memMB int64, gpus int32, cfg bool) string {
	var parts []string
	if cpus > 0 {
		parts = append(parts, fmt.Sprintf("cpu=%d", cpus))
	}
	if memMB > 0 {
		parts = append(parts, "mem="+reqMem(memMB))
	}
	if cfg && cpus > 0 {
		parts = append(parts, fmt.Sprintf("billing=%d", cpus))
	}
	if gpus > 0 {
		parts = append(parts, fmt.Sprintf("gres/gpu=%d", gpus))
	}
	return strings.Join(parts, ",")
}

// nodeReason is scontrol's "Reason=why [user@time]", "(null)" without one.
func nodeReason(n *phalanxv1.Node, loc *time.Location) string {
	if n.Reason == "" {
		return "(null)"
	}
	return fmt.Sprintf("%s [%s@%s]", n.Reason, orDefault(n.ReasonUser, "root"), fmtTime(n.ReasonTime, loc, "Unknown"))
}

// nicList prints a node's RDMA ports as
// "mlx5_0/1(ACTIVE,200Gb/s,InfiniBand,gpu:0-1@PIX),...": name, state, rate,
// link layer and the nearest GPUs; "(null)" without any.
func nicList(nics []*phalanxv1.NICInfo) string {
	if len(nics) == 0 {
		return "(null)"
	}
	out := make([]string, len(nics))
	for i, n := range nics {
		attrs := []string{n.State, shortRate(n.Rate), n.LinkLayer}
		if n.Netdev != "" {
			attrs = append(attrs, "netdev:"+n.Netdev)
		}
		if len(n.Gpus) > 0 {
			attrs = append(attrs, "gpu:"+indexRanges(n.Gpus)+"@"+n.Affinity)
		}
		out[i] = fmt.Sprintf("%s/%d(%s)", n.Device, n.Port, strings.Join(attrs, ","))
	}
	return strings.Join(out, ",")
}

// shortRate turns sysfs's "200 Gb/sec (4X HDR)" into "200Gb/s".
func shortRate(rate string) string {
	f := strings.Fields(rate)
	if len(f) >= 2 && f[1] == "Gb/sec" {
		return f[0] + "Gb/s"
	}
	return orDefault(strings.ReplaceAll(rate, " ", "_"), "?")
}

// indexRanges prints sorted indexes as ranges: 0-3,6.
func indexRanges[T ~int | ~int32](ids []T) string {
	var parts []string
	for i := 0; i < len(ids); {
		k := i
		for k+1 < len(ids) && ids[k+1] == ids[k]+1 {
			k++
		}
		if k == i {
			parts = append(parts, fmt.Sprint(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[k]))
		}
		i = k + 1
	}
	return strings.Join(parts, ",")
}

// gres prints "gpu:MODEL:N", the model's spaces as underscores; "(null)"
// for a node without GPUs.
func gres(n *phalanxv1.Node, count int32) string {
	if n.Gpus == 0 {
		return "(null)"
	}
	if n.GpuModel == "" {
		return fmt.Sprintf("gpu:%d", count)
	}
	return fmt.Sprintf("gpu:%s:%d", strings.ReplaceAll(n.GpuModel, " ", "_"), count)
}

// FormatPartition prints a partition as "scontrol show partition" does.
func FormatPartition(p *phalanxv1.Partition, nodes []*phalanxv1.Node) string {
	yes := map[bool]string{true: "YES", false: "NO"}
	maxNodes := "UNLIMITED"
	if p.MaxNodes > 0 {
		maxNodes = fmt.Sprint(p.MaxNodes)
	}
	defTime := "NONE"
	if p.DefaultTimeSeconds > 0 {
		defTime = runTime(time.Duration(p.DefaultTimeSeconds) * time.Second)
	}
	// Slurm shows AllowAccounts, or DenyAccounts when only that is set.
	accounts := kv("AllowAccounts", orDefault(strings.Join(p.AllowAccounts, ","), "ALL"))
	if len(p.AllowAccounts) == 0 && len(p.DenyAccounts) > 0 {
		accounts = kv("DenyAccounts", strings.Join(p.DenyAccounts, ","))
	}
	member := map[string]bool{}
	for _, n := range p.Nodes {
		member[n] = true
	}
	var cpus, mem int64
	for _, n := range nodes {
		if member[n.Name] {
			cpus, mem = cpus+int64(n.Cpus), mem+n.MemoryMb
		}
	}
	tres := fmt.Sprintf("cpu=%d,mem=%s,node=%d,billing=%d", cpus, reqMem(mem), len(p.Nodes), cpus)
	var b strings.Builder
	// Slurm 22.05's lines and keys; those of features Phalanx does not
	// have (QOS, hidden or root-only partitions, LLN, per-CPU limits) with
	// the value that says so, as Slurm shows them unset. Left out: what
	// the partition does not carry (DisableRootJobs and GraceTime are
	// the controllers' settings) and DefMemPerNode (a job without --mem
	// holds no memory here, which no Slurm value says).
	kvLines(&b, [][]string{
		{kv("PartitionName", p.Name)},
		{kv("AllowGroups", orDefault(strings.Join(p.AllowGroups, ","), "ALL")), accounts, kv("AllowQos", "ALL")},
		{kv("AllocNodes", "ALL"), kv("Default", yes[p.Default]), kv("QoS", "N/A")},
		{kv("DefaultTime", defTime), kv("ExclusiveUser", "NO"), kv("Hidden", "NO")},
		{kv("MaxNodes", maxNodes), kv("MaxTime", limitOrUnlimited(time.Duration(p.MaxTimeSeconds)*time.Second)), kv("MinNodes", p.MinNodes),
			kv("LLN", "NO"), kv("MaxCPUsPerNode", "UNLIMITED")},
		{kv("Nodes", orDefault(hostlist.Compress(p.Nodes), "(null)"))},
		{kv("PriorityJobFactor", 1), kv("PriorityTier", p.PriorityTier), kv("RootOnly", "NO"), kv("ReqResv", "NO"),
			kv("OverSubscribe", map[bool]string{true: "EXCLUSIVE", false: "NO"}[p.Exclusive])},
		{kv("OverTimeLimit", "NONE"), kv("PreemptMode", orDefault(p.PreemptMode, "OFF"))},
		{kv("State", orDefault(p.State, string(cluster.PartitionUp))), kv("TotalCPUs", cpus), kv("TotalNodes", len(p.Nodes)), kv("SelectTypeParameters", "NONE")},
		{kv("JobDefaults", "(null)")},
		{kv("TRES", tres)},
	})
	return b.String()
}

// FormatController prints one member of the Raft configuration as "scontrol
// show controllers" does. What only the replica itself knows (its role and
// progress) is N/A when it could not be reached, and Reason= says why.
// LastContact is when a follower last heard from the leader.
func FormatController(ci *phalanxv1.ControllerInfo, loc *time.Location) string {
	st := ci.GetStatus()
	known := func(n uint64) string {
		if !ci.Reachable {
			return "N/A"
		}
		return fmt.Sprint(n)
	}
	role, leader, contact := "Unreachable", "N/A", "N/A"
	if ci.Reachable {
		role = orDefault(st.GetRole(), "Unknown")
		leader = orDefault(st.GetLeaderId(), "(null)")
		if role != "Leader" {
			contact = fmtTime(st.GetLastContact(), loc, "N/A")
		}
	}
	lines := [][]string{
		{kv("ControllerId", ci.Id), kv("Address", orDefault(ci.RaftAddr, "(null)")), kv("ApiAddress", orDefault(ci.ApiAddr, "(null)")),
			kv("Role", role), kv("AppliedIndex", known(st.GetAppliedIndex())), kv("LastContact", contact)},
		{kv("Voter", map[bool]string{true: "yes", false: "no"}[ci.Voter]), kv("Term", known(st.GetTerm())), kv("LeaderId", leader)},
		{kv("CommitIndex", known(st.GetCommitIndex())), kv("LastLogIndex", known(st.GetLastLogIndex())), kv("DurableIndex", known(st.GetDurableIndex()))},
	}
	if ci.Error != "" {
		lines = append(lines, []string{kv("Reason", controllerReason(ci.Error))})
	}
	var b strings.Builder
	kvLines(&b, lines)
	return b.String()
}

// controllerReason is why a controller could not be read, on one line and
// without gRPC's "rpc error: code = X desc = " wrapping.
func controllerReason(msg string) string {
	if rest, ok := strings.CutPrefix(msg, "rpc error: code = "); ok {
		if _, desc, ok := strings.Cut(rest, " desc = "); ok {
			msg = desc
		}
	}
	return strings.Join(strings.Fields(msg), " ")
}

// FormatPing prints one line per controller as "scontrol ping" does:
// "Controller ID [(leader)] at ADDR is UP|DOWN". ADDR is the API address,
// or the Raft address of a controller whose API address is not recorded.
func FormatPing(ctls []*phalanxv1.ControllerInfo) string {
	var b strings.Builder
	for _, ci := range ctls {
		name, state := ci.Id, "DOWN"
		if isLeader(ci) {
			name += " (leader)"
		}
		if ci.Reachable {
			state = "UP"
		}
		fmt.Fprintf(&b, "Controller %s at %s is %s\n", name, orDefault(ci.ApiAddr, ci.RaftAddr), state)
	}
	return b.String()
}

// isLeader reports whether a controller answered that it leads.
func isLeader(ci *phalanxv1.ControllerInfo) bool {
	return ci.Reachable && ci.GetStatus().GetRole() == "Leader"
}
