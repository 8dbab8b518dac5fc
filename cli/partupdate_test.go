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

// reconfigureFake applies a config that has a warning.
type reconfigureFake struct {
	phalanxv1.UnimplementedControllerServiceServer
}

func (reconfigureFake) Reconfigure(context.Context, *phalanxv1.ReconfigureRequest) (*phalanxv1.ReconfigureResponse, error) {
	return &phalanxv1.ReconfigureResponse{Changes: []string{"partition debug added"},
		Warnings: []string{`/etc/phalanx/phalanx.conf:4: unknown key "MaxTme"`}}, nil
}

// scontrol reconfigure prints what changed, and the file's warnings on
// stderr: a typo'd key reaches the admin who asked, not only the log.
func TestReconfigurePrintsWarnings(t *testing.T) {
	addr := serveFake(t, reconfigureFake{})
	code, stdout, stderr := runOut(t, addr, "scontrol", "reconfigure")
	if code != 0 || stdout != "partition debug added\n" || stderr != "scontrol: warning: /etc/phalanx/phalanx.conf:4: unknown key \"MaxTme\"\n" {
		t.Errorf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// -Q, Slurm's quiet: errors only, before or after the command.
	for _, args := range [][]string{{"scontrol", "-Q", "reconfigure"}, {"scontrol", "reconfigure", "--quiet"}} {
		code, stdout, stderr = runOut(t, addr, args...)
		if code != 0 || stdout != "partition debug added\n" || stderr != "" {
			t.Errorf("%q: code %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}
