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
		State: st, Reason: n.Reason, Registered: Time(n.Registered), StateTime: Time(n.StateTime),
	}, nil
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
		State: st, Reason: r.GetReason(), Registered: FromTime(r.GetRegistered()), StateTime: FromTime(r.GetStateTime()),
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
		PriorityTier: int32(p.PriorityTier), PreemptMode: p.PreemptMode,
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
		MaxNodes: int(r.GetMaxNodes()), PriorityTier: int(r.GetPriorityTier()), PreemptMode: r.GetPreemptMode(),
	}, nil
}
