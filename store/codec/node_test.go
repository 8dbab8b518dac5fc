package codec

import (
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// A partition survives its stored form with every field set: one the codec
// forgot would read back as zero.
func TestPartitionRoundTrip(t *testing.T) {
	p := &cluster.Partition{
		Name: "gpu", Nodes: []string{"n1", "n2"}, Default: true, State: cluster.PartitionDrain,
		MaxTime: 2 * time.Hour, DefaultTime: time.Hour, MaxNodes: 8, MinNodes: 2, PriorityTier: 3,
		PreemptMode: "REQUEUE", AllowAccounts: []string{"ml"}, DenyAccounts: []string{"guest"},
		AllowGroups: []string{"staff"}, Exclusive: true,
	}
	r, err := Partition(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromPartition(r)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Errorf("read back as %+v; want %+v", got, p)
	}
}
