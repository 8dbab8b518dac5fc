package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/sbatch"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

const updateUsage = "write scontrol update NodeName=NODES State=DRAIN|RESUME|UNDRAIN|DOWN [Reason=WHY], or scontrol update JobId=JOBID[,JOBID...] [JobName=NAME] [TimeLimit=LIMIT] [Partition=P] [NumNodes=N] [Dependency=DEP] [Nice=N] [QOS=Q] [Priority=N] [ArrayTaskThrottle=N], or scontrol update PartitionName=P [State=UP|DOWN|DRAIN|INACTIVE] [MaxTime=T] [DefaultTime=T] [MaxNodes=N] [MinNodes=N] [PriorityTier=N] [Default=YES]"

// updateKeys are the keys scontrol update takes, each as updateFields
// stores it (in lower case) and as Slurm spells it: messages name a key so.
var updateKeys = map[string]string{
	"nodename": "NodeName", "jobid": "JobId", "partitionname": "PartitionName",
	"state": "State", "reason": "Reason",
	"jobname": "JobName", "timelimit": "TimeLimit", "partition": "Partition", "numnodes": "NumNodes", "dependency": "Dependency",
	"nice": "Nice", "qos": "QOS", "priority": "Priority", "arraytaskthrottle": "ArrayTaskThrottle",
	"maxtime": "MaxTime", "defaulttime": "DefaultTime", "maxnodes": "MaxNodes", "minnodes": "MinNodes", "prioritytier": "PriorityTier", "default": "Default",
}

// keyName is a key of updateFields' as Slurm spells it.
func keyName(key string) string {
	if name, ok := updateKeys[key]; ok {
		return name
	}
	return key
}

// update runs `scontrol update`: KEY=VALUE pairs, in any order, naming
// either nodes (NodeName=) or a job (JobId=), as Slurm's.
func (k *commands) update(c *ucli.Context, args []string) error {
	if fields, err := updateFields(args); err == nil && fields["partitionname"] != "" {
		return k.updatePartition(c, fields)
	}
	nodeReq, change, err := updateRequest(args)
	if err != nil {
		return err
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	if nodeReq != nil {
		return cn.call(c.Context, func(ctx context.Context) error {
			_, err := cn.api.UpdateNode(ctx, nodeReq)
			return err
		})
	}
	// One request ID for the command: the controller remembers it by job,
	// so that a retry (a failover) does not apply TimeLimit=+30 twice.
	requestID := newRequestID()
	return cn.eachJob(c.Context, "update", change.refs, nil, func(ctx context.Context, id uint64) error {
		req := proto.Clone(change.req).(*phalanxv1.UpdateJobRequest)
		req.JobId, req.RequestId = id, requestID
		_, err := cn.api.UpdateJob(ctx, req)
		return err
	})
}

// jobChange is a scontrol update of jobs: the jobs JobId= names (an
// array's ID: each of its tasks in the queue) and the change, which each
// gets with its own ID.
type jobChange struct {
	refs []jobRef
	req  *phalanxv1.UpdateJobRequest
}

// updateRequest reads the arguments of `scontrol update` into the request
// for nodes or the change of jobs.
func updateRequest(args []string) (*phalanxv1.UpdateNodeRequest, *jobChange, error) {
	fields, err := updateFields(args)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range partitionKeys[2:] { // a partition's own: MaxTime=, ...
		if _, ok := fields[k]; ok {
			return nil, nil, fmt.Errorf("update: %s= is a partition's (PartitionName=P %s=...): %s", keyName(k), keyName(k), updateUsage)
		}
	}
	switch {
	case fields["nodename"] != "" && fields["jobid"] != "":
		return nil, nil, fmt.Errorf("update nodes or a job, not both: %s", updateUsage)
	case fields["nodename"] != "":
		req, err := nodeUpdate(fields)
		return req, nil, err
	case fields["jobid"] != "":
		req, err := jobUpdate(fields)
		return nil, req, err
	}
	return nil, nil, errors.New(updateUsage)
}

// updateFields reads KEY=VALUE arguments; keys are case-insensitive and
// may not repeat. A value may hold spaces when the shell kept it in one
// argument (Reason="bad ECC"). TimeLimit+=30 and TimeLimit-=30, Slurm's
// other spelling of a change to a limit, are TimeLimit=+30 and =-30.
func updateFields(args []string) (map[string]string, error) {
	fields := map[string]string{}
	for _, a := range args {
		key, val, ok := strings.Cut(a, "=")
		key = strings.ToLower(key)
		if sign := strings.TrimPrefix(key, "timelimit"); ok && (sign == "+" || sign == "-") {
			if strings.HasPrefix(val, "+") || strings.HasPrefix(val, "-") {
				return nil, fmt.Errorf("update: %s: give the change once, TimeLimit%s=%s", a, sign, strings.TrimLeft(val, "+-"))
			}
			key, val = "timelimit", sign+val
		}
		switch key { // Slurm's other names
		case "nodes", "node":
			key = "nodename"
		case "job":
			key = "jobid"
		case "nodecnt":
			key = "numnodes"
		case "name":
			key = "jobname"
		}
		if _, known := updateKeys[key]; !known {
			return nil, fmt.Errorf("update: unknown or unsupported field %q: %s", a, updateUsage)
		}
		if !ok || (val == "" && key != "dependency") { // Dependency= removes it
			return nil, fmt.Errorf("update: %s needs a value (%s=...)", strings.TrimSuffix(a, "="), keyName(key))
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("update: %s is given twice", keyName(key))
		}
		fields[key] = val
	}
	return fields, nil
}

func nodeUpdate(f map[string]string) (*phalanxv1.UpdateNodeRequest, error) {
	for _, k := range []string{"JobName", "TimeLimit", "Partition", "NumNodes", "Dependency", "Nice", "QOS", "Priority"} {
		if _, ok := f[strings.ToLower(k)]; ok {
			return nil, fmt.Errorf("%s= updates a job, not nodes: %s", k, updateUsage)
		}
	}
	state := strings.ToUpper(f["state"])
	switch state {
	case "DRAIN", "RESUME", "UNDRAIN", "DOWN":
	case "":
		return nil, fmt.Errorf("update NodeName=%s needs a State=DRAIN|RESUME|UNDRAIN|DOWN", f["nodename"])
	default: // named as written (the controller, which checks it too, sees it in upper case)
		return nil, fmt.Errorf("State=%s: a node's state is DRAIN, RESUME, UNDRAIN or DOWN", f["state"])
	}
	names, err := hostlist.Expand(f["nodename"])
	if err != nil {
		return nil, fmt.Errorf("NodeName=%s: %w", f["nodename"], hostlistError(err))
	}
	return &phalanxv1.UpdateNodeRequest{Names: names, State: state, Reason: f["reason"]}, nil
}

func jobUpdate(f map[string]string) (*jobChange, error) {
	if f["state"] != "" || f["reason"] != "" {
		return nil, fmt.Errorf("State= and Reason= update nodes, not a job: %s", updateUsage)
	}
	refs, err := parseJobRefs(f["jobid"])
	if err != nil {
		return nil, fmt.Errorf("JobId=%s: %w", f["jobid"], err)
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("update: JobId= needs a value (JobId=ID, ARRAYID_TASKID or ARRAYID_[LIST])")
	}
	req := &phalanxv1.UpdateJobRequest{}
	if name, ok := f["jobname"]; ok {
		req.Name = &name
	}
	if tl, ok := f["timelimit"]; ok {
		if err := timeLimitField(tl, req); err != nil {
			return nil, err
		}
	}
	if err := jobRequestFields(f, req); err != nil {
		return nil, err
	}
	if proto.Equal(req, &phalanxv1.UpdateJobRequest{}) {
		return nil, fmt.Errorf("update JobId=%s: nothing to change: give JobName=, TimeLimit=, Partition=, NumNodes=, Dependency=, Nice=, QOS=, Priority= or ArrayTaskThrottle=", f["jobid"])
	}
	if req.ArrayTaskThrottle != nil && slices.ContainsFunc(refs, func(r jobRef) bool { return r.tasks != nil }) {
		return nil, fmt.Errorf("ArrayTaskThrottle= changes a whole array: name it by its ID (JobId=%d), not by its tasks", refs[0].id)
	}
	return &jobChange{refs: refs, req: req}, nil
}

// timeLimitField reads TimeLimit=: a limit, or +LIMIT / -LIMIT to add to
// or take from the job's own, as Slurm's scontrol reads it. As there, 0 is
// a limit of zero (a running job times out), not none as sbatch --time=0
// is: none is UNLIMITED.
func timeLimitField(tl string, req *phalanxv1.UpdateJobRequest) error {
	sign := int64(0)
	switch {
	case strings.HasPrefix(tl, "+"):
		sign = 1
	case strings.HasPrefix(tl, "-"):
		sign = -1
	}
	d, err := cluster.ParseDuration(strings.TrimLeft(tl, "+-"))
	if err != nil || (sign != 0 && d == 0) {
		if err == nil {
			err = fmt.Errorf("a change needs a length, e.g. +30 or -1:00:00")
		}
		return fmt.Errorf("TimeLimit=%s: %w", tl, err)
	}
	secs := int64(d / time.Second)
	if sign == 0 && secs == 0 && !unlimited(tl) { // 0, 0:00, ...: a limit of zero, as Slurm's scontrol reads it
		req.TimeLimitZero = true
		return nil
	}
	if sign == 0 {
		req.TimeLimitSeconds = &secs
		return nil
	}
	secs *= sign
	req.TimeLimitChangeSeconds = &secs
	return nil
}

// jobRequestFields reads the fields of a pending job's request: the
// controller checks them as it checks a submit's.
func jobRequestFields(f map[string]string, req *phalanxv1.UpdateJobRequest) error {
	if v, ok := f["partition"]; ok {
		req.Partition = &v
	}
	if v, ok := f["numnodes"]; ok {
		n, err := sbatch.ParseNodes(v) // MIN[-MAX]: MIN is used, as at submit
		if err != nil {
			return fmt.Errorf("NumNodes=%s: %w", v, err)
		}
		req.Nodes = &n
	}
	if v, ok := f["dependency"]; ok {
		d, err := cluster.ParseDependency(v)
		if err != nil {
			return err
		}
		s := d.String()
		req.Dependency = &s
	}
	if v, ok := f["nice"]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return fmt.Errorf("Nice=%s: give a whole number", v)
		}
		n32 := int32(n)
		req.Nice = &n32
	}
	if v, ok := f["qos"]; ok {
		req.Qos = &v
	}
	if v, ok := f["priority"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("Priority=%s: give a whole number, 0 or more", v)
		}
		req.Priority = &n
	}
	if v, ok := f["arraytaskthrottle"]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("Invalid ArrayTaskThrottle value %q: give the most tasks of the array to run at once, 0 for no limit", v)
		}
		n32 := int32(n)
		req.ArrayTaskThrottle = &n32
	}
	return nil
}

// unlimited reports whether a time limit is Slurm's word for none
// (UNLIMITED, INFINITE) rather than a length.
func unlimited(v string) bool {
	v = strings.TrimSpace(v)
	return strings.EqualFold(v, "UNLIMITED") || strings.EqualFold(v, "INFINITE")
}
