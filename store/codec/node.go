package codec

import (
	"time"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// Node encodes a node.
func Node(n *cluster.Node) (*statev1.Node, error) {
	st, err := NodeState(n.State)
	if err != nil {
		return nil, err
	}
	return &statev1.Node{
		Name: n.Name, Addr: n.Addr, Cpus: int32(n.CPUs), MemoryMb: n.MemoryMB, Gpus: int32(n.GPUs),
		GpuModel: n.GPUModel, Features: n.Features, Weight: int32(n.Weight), Leaf: n.Leaf,
		State: st, Reason: n.Reason, ReasonUser: n.ReasonUser, Registered: Time(n.Registered), StateTime: Time(n.StateTime),
		Nics: nics(n.NICs), Health: n.Health, Fences: n.Fences, RegisteredIndex: n.RegisteredIndex, StateIndex: n.StateIndex,
	}, nil
}

func nics(ns []cluster.NIC) []*statev1.NIC {
	var out []*statev1.NIC
	for _, n := range ns {
		gpus := make([]int32, len(n.GPUs))
		for i, g := range n.GPUs {
			gpus[i] = int32(g)
		}
		out = append(out, &statev1.NIC{Device: n.Device, Port: int32(n.Port), State: n.State, PhysState: n.PhysState,
			Rate: n.Rate, LinkLayer: n.LinkLayer, Netdev: n.Netdev, PciAddr: n.PCIAddr, NumaNode: int32(n.NUMANode),
			Gpus: gpus, Affinity: n.Affinity})
	}
	return out
}

func fromNICs(rs []*statev1.NIC) []cluster.NIC {
	var out []cluster.NIC
	for _, r := range rs {
		var gpus []int
		for _, g := range r.GetGpus() {
			gpus = append(gpus, int(g))
		}
		out = append(out, cluster.NIC{Device: r.GetDevice(), Port: int(r.GetPort()), State: r.GetState(),
			PhysState: r.GetPhysState(), Rate: r.GetRate(), LinkLayer: r.GetLinkLayer(), Netdev: r.GetNetdev(),
			PCIAddr: r.GetPciAddr(), NUMANode: int(r.GetNumaNode()), GPUs: gpus, Affinity: r.GetAffinity()})
	}
	return out
}

// FromNode decodes a node.
func FromNode(r *statev1.Node) (*cluster.Node, error) {
	st, err := FromNodeState(r.GetState())
	if err != nil {
		return nil, err
	}
	return &cluster.Node{
		Name: r.GetName(), Addr: r.GetAddr(), CPUs: int(r.GetCpus()), MemoryMB: r.GetMemoryMb(), GPUs: int(r.GetGpus()),
		GPUModel: r.GetGpuModel(), Features: r.GetFeatures(), Weight: int(r.GetWeight()), Leaf: r.GetLeaf(),
		State: st, Reason: r.GetReason(), ReasonUser: r.GetReasonUser(), Registered: FromTime(r.GetRegistered()),
		StateTime: FromTime(r.GetStateTime()), NICs: fromNICs(r.GetNics()), Health: r.GetHealth(), Fences: r.GetFences(),
		RegisteredIndex: r.GetRegisteredIndex(), StateIndex: r.GetStateIndex(),
	}, nil
}

// Partition encodes a partition.
func Partition(p *cluster.Partition) (*statev1.Partition, error) {
	st, err := partitionStates.encode(p.State)
	if err != nil {
		return nil, err
	}
	return &statev1.Partition{
		Name: p.Name, Nodes: p.Nodes, AllNodes: p.AllNodes, Default: p.Default, State: st,
		MaxTime: int64(p.MaxTime), DefaultTime: int64(p.DefaultTime), MaxNodes: int32(p.MaxNodes),
		MinNodes: int32(p.MinNodes), PriorityTier: int32(p.PriorityTier), PreemptMode: string(p.PreemptMode),
		AllowAccounts: p.AllowAccounts, DenyAccounts: p.DenyAccounts, Exclusive: p.Exclusive,
		AllowGroups: p.AllowGroups,
	}, nil
}

// FromPartition decodes a partition.
func FromPartition(r *statev1.Partition) (*cluster.Partition, error) {
	st, err := partitionStates.decode(r.GetState())
	if err != nil {
		return nil, err
	}
	return &cluster.Partition{
		Name: r.GetName(), Nodes: r.GetNodes(), AllNodes: r.GetAllNodes(), Default: r.GetDefault(), State: st,
		MaxTime: time.Duration(r.GetMaxTime()), DefaultTime: time.Duration(r.GetDefaultTime()),
		MaxNodes: int(r.GetMaxNodes()), PriorityTier: int(r.GetPriorityTier()), PreemptMode: cluster.PreemptMode(r.GetPreemptMode()),
		AllowAccounts: r.GetAllowAccounts(), DenyAccounts: r.GetDenyAccounts(), Exclusive: r.GetExclusive(),
		AllowGroups: r.GetAllowGroups(), MinNodes: int(r.GetMinNodes()),
	}, nil
}
