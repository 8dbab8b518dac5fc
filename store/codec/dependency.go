package codec

import (
	"time"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// depTypes maps dependency kinds to their persisted form.
var depTypes = map[cluster.DepType]statev1.DepType{
	cluster.DepAfter:      statev1.DepType_DEP_TYPE_AFTER,
	cluster.DepAfterAny:   statev1.DepType_DEP_TYPE_AFTER_ANY,
	cluster.DepAfterOK:    statev1.DepType_DEP_TYPE_AFTER_OK,
	cluster.DepAfterNotOK: statev1.DepType_DEP_TYPE_AFTER_NOT_OK,
	cluster.DepAfterCorr:  statev1.DepType_DEP_TYPE_AFTER_CORR,
	cluster.DepSingleton:  statev1.DepType_DEP_TYPE_SINGLETON,
}

func depConds(d cluster.Dependency) []*statev1.DepCond {
	if d.IsZero() {
		return nil
	}
	out := make([]*statev1.DepCond, len(d.Conds))
	for i, c := range d.Conds {
		out[i] = &statev1.DepCond{Type: depTypes[c.Type], JobId: uint64(c.Job), DelaySeconds: int64(c.Delay / time.Second),
			FirstTask: c.FirstTask, TaskId: int32(c.Task)}
	}
	return out
}

// fromDepConds decodes a dependency; a condition of a kind this version
// does not know is kept as afterany on its job (it waits for the job's
// end, the safest reading), or dropped when it names none.
func fromDepConds(cs []*statev1.DepCond, anyOf bool) cluster.Dependency {
	if len(cs) == 0 {
		return cluster.Dependency{}
	}
	d := cluster.Dependency{Any: anyOf}
	for _, c := range cs {
		typ := cluster.DepAfterAny
		for t, p := range depTypes {
			if p == c.GetType() {
				typ = t
			}
		}
		if typ != cluster.DepSingleton && c.GetJobId() == 0 {
			continue
		}
		dc := cluster.DepCond{Type: typ, Job: cluster.JobID(c.GetJobId()), Delay: time.Duration(c.GetDelaySeconds()) * time.Second}
		if c.GetFirstTask() {
			dc.FirstTask, dc.Task = true, int(c.GetTaskId())
		}
		d.Conds = append(d.Conds, dc)
	}
	return d
}

// DependencyValue is a whole dependency's persisted form, for commands.
func DependencyValue(d cluster.Dependency) *statev1.DependencyValue {
	return &statev1.DependencyValue{Conds: depConds(d), Any: d.Any}
}

// FromDependencyValue decodes DependencyValue's form.
func FromDependencyValue(v *statev1.DependencyValue) cluster.Dependency {
	return fromDepConds(v.GetConds(), v.GetAny())
}

func arrayRecord(a *cluster.ArrayTask) *statev1.ArrayTask {
	if a == nil {
		return nil
	}
	return &statev1.ArrayTask{JobId: uint64(a.JobID), TaskId: int32(a.TaskID), Count: int32(a.Count), Min: int32(a.Min),
		Max: int32(a.Max), Step: int32(a.Step), Throttle: int32(a.Throttle)}
}

func fromArrayRecord(r *statev1.ArrayTask) *cluster.ArrayTask {
	if r == nil {
		return nil
	}
	return &cluster.ArrayTask{JobID: cluster.JobID(r.GetJobId()), TaskID: int(r.GetTaskId()), Count: int(r.GetCount()),
		Min: int(r.GetMin()), Max: int(r.GetMax()), Step: int(r.GetStep()), Throttle: int(r.GetThrottle())}
}

// ArrayBase is the array a stored job record belongs to, and whether it
// belongs to one (for the store's reference count of shared payloads).
func ArrayBase(r *statev1.Job) (cluster.JobID, bool) {
	a := r.GetSpec().GetArray()
	return cluster.JobID(a.GetJobId()), a != nil
}
