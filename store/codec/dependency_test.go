package codec

import (
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// A dependency survives its stored form, a condition on an array's first
// task alone (FirstTask) included: read back without it, it would wait
// for every task.
func TestDependencyRoundTrip(t *testing.T) {
	for _, d := range []cluster.Dependency{
		{Conds: []cluster.DepCond{{Type: cluster.DepAfterOK, Job: 84, FirstTask: true, Task: 5}, {Type: cluster.DepAfterOK, Job: 84}}},
		{Conds: []cluster.DepCond{{Type: cluster.DepAfter, Job: 7, Delay: 5 * time.Minute}, {Type: cluster.DepSingleton}}, Any: true},
	} {
		got := fromDepConds(depConds(d), d.Any)
		if !reflect.DeepEqual(got, d) {
			t.Errorf("%s: read back as %+v; want %+v", d, got, d)
		}
	}
	d := cluster.Dependency{Conds: []cluster.DepCond{{Type: cluster.DepAfterOK, Job: 84, FirstTask: true, Task: 5}}}
	if s := d.String(); s != "afterok:84_5" {
		t.Errorf("String() = %q; want afterok:84_5, the task named", s)
	}
}
