package cli

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// partitionsFake knows no partition.
type partitionsFake struct {
	phalanxv1.UnimplementedControllerServiceServer
}

func (partitionsFake) UpdatePartition(context.Context, *phalanxv1.UpdatePartitionRequest) (*phalanxv1.UpdatePartitionResponse, error) {
	return nil, status.Error(codes.NotFound, `Invalid partition name specified: "nope"`)
}

// scontrol update of a partition that does not exist fails as Slurm's
// scontrol words it.
func TestUpdateUnknownPartition(t *testing.T) {
	addr := serveFake(t, partitionsFake{})
	code, _, stderr := runOut(t, addr, "scontrol", "update", "PartitionName=nope", "State=DOWN")
	if code != 1 || stderr != "slurm_update error: Invalid partition name specified\n" {
		t.Errorf("code %d, stderr %q; want 1, Slurm's slurm_update error", code, stderr)
	}
}
