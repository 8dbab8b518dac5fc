package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// partitionKeys are the keys scontrol update PartitionName= takes.
var partitionKeys = []string{"partitionname", "state", "maxtime", "defaulttime", "maxnodes", "minnodes", "prioritytier", "default"}

// partitionUpdate reads scontrol update PartitionName=... into a request.
func partitionUpdate(f map[string]string) (*phalanxv1.UpdatePartitionRequest, error) {
	req := &phalanxv1.UpdatePartitionRequest{Name: f["partitionname"]}
	for k := range f {
		if !slices.Contains(partitionKeys, k) {
			return nil, fmt.Errorf("update PartitionName=%s: %s= is not a partition's: %s", req.Name, keyName(k), updateUsage)
		}
	}
	if v, ok := f["state"]; ok {
		st := strings.ToUpper(v)
		if !slices.Contains([]string{"UP", "DOWN", "DRAIN", "INACTIVE"}, st) { // named as written
			return nil, fmt.Errorf("State=%s: a partition's state is UP, DOWN, DRAIN or INACTIVE", v)
		}
		req.State = &st
	}
	for _, d := range []struct {
		key string
		set **int64
	}{{"maxtime", &req.MaxTimeSeconds}, {"defaulttime", &req.DefaultTimeSeconds}} {
		v, ok := f[d.key]
		if !ok {
			continue
		}
		t, err := cluster.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", keyName(d.key), v, err)
		}
		secs := int64(t / time.Second)
		*d.set = &secs
	}
	for _, n := range []struct {
		key string
		set **int32
	}{{"maxnodes", &req.MaxNodes}, {"minnodes", &req.MinNodes}, {"prioritytier", &req.PriorityTier}} {
		v, ok := f[n.key]
		if !ok {
			continue
		}
		if strings.EqualFold(v, "UNLIMITED") && n.key == "maxnodes" {
			v = "0"
		}
		x, err := strconv.ParseInt(v, 10, 32)
		if err != nil || x < 0 {
			return nil, fmt.Errorf("%s=%s: give a count, 0 or more", keyName(n.key), v)
		}
		x32 := int32(x)
		*n.set = &x32
	}
	if v, ok := f["default"]; ok {
		yes := strings.EqualFold(v, "yes")
		if !yes && !strings.EqualFold(v, "no") {
			return nil, fmt.Errorf("Default=%s: give YES or NO", v)
		}
		req.Default = &yes
	}
	if len(f) == 1 {
		return nil, fmt.Errorf("update PartitionName=%s: nothing to change: give State=, MaxTime=, DefaultTime=, MaxNodes=, MinNodes=, PriorityTier= or Default=", req.Name)
	}
	return req, nil
}

// updatePartition sends scontrol update PartitionName=...
func (k *commands) updatePartition(c *ucli.Context, f map[string]string) error {
	req, err := partitionUpdate(f)
	if err != nil {
		return err
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	err = cn.call(c.Context, func(ctx context.Context) error {
		_, err := cn.api.UpdatePartition(ctx, req)
		return err
	})
	if isNotFound(err) { // as Slurm's scontrol words it
		return &rawError{msg: "slurm_update error: Invalid partition name specified"}
	}
	return err
}

// reconfigure runs scontrol reconfigure: the leader reads its config file
// again and applies it; what changed is printed, one line each.
func (k *commands) reconfigure(c *ucli.Context, args []string, quiet bool) error {
	if len(args) > 0 {
		return fmt.Errorf("reconfigure takes no arguments")
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	var resp *phalanxv1.ReconfigureResponse
	if err := cn.call(c.Context, func(ctx context.Context) (err error) {
		resp, err = cn.api.Reconfigure(ctx, &phalanxv1.ReconfigureRequest{})
		return err
	}); err != nil {
		return err
	}
	for _, w := range resp.Warnings {
		if !quiet { // -Q: errors only
			fmt.Fprintln(k.sys.Stderr, "scontrol: warning: "+w)
		}
	}
	for _, ch := range resp.Changes {
		fmt.Fprintln(k.sys.Stdout, ch)
	}
	return nil
}
