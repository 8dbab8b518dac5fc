package cluster

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseArray(t *testing.T) {
	for in, want := range map[string]ArraySpec{
		"0-3":       {Tasks: []int{0, 1, 2, 3}},
		"1,3,7":     {Tasks: []int{1, 3, 7}},
		"0-12:4":    {Tasks: []int{0, 4, 8, 12}},
		"0-5%2":     {Tasks: []int{0, 1, 2, 3, 4, 5}, Throttle: 2},
		"7,1-2,2":   {Tasks: []int{1, 2, 7}},
		"1000":      {Tasks: []int{1000}},
		" 3-4:1%1 ": {Tasks: []int{3, 4}, Throttle: 1},
		// As Slurm 22.05's sbatch (checked live): %0 and a bare % are no
		// limit, an empty part of the list is skipped.
		"0-3%0": {Tasks: []int{0, 1, 2, 3}},
		"0-1%":  {Tasks: []int{0, 1}},
		"1,,3":  {Tasks: []int{1, 3}},
	} {
		got, err := ParseArray(in, DefaultMaxArraySize)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseArray(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":       "no index",
		",%2":    "no index",
		"0-3%-1": "give the most tasks to run at once",
		"5-1":    "runs backwards",
		"0-10:0": "give 1 or more",
		"x":      `"x" is not an index`,
		"1001":   "MaxArraySize=1001",
		"-1":     "is not an index",
		// Repeats count: a few bytes must not list billions of indices.
		"0-1000,0-1000":                "list over 1001 indices",
		strings.Repeat("0-999,", 2000): "list over 1001 indices",
	} {
		if _, err := ParseArray(in, DefaultMaxArraySize); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseArray(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}

func TestArrayTasksAndFormat(t *testing.T) {
	a := NewArrayTasks(40, ArraySpec{Tasks: []int{0, 4, 8}, Throttle: 2})
	if len(a) != 3 || a[1] != (ArrayTask{JobID: 40, TaskID: 4, Count: 3, Min: 0, Max: 8, Step: 4, Throttle: 2}) {
		t.Errorf("tasks %+v", a)
	}
	if b := NewArrayTasks(1, ArraySpec{Tasks: []int{1, 2, 7}}); b[0].Step != 1 {
		t.Errorf("uneven indices: step %d, want 1", b[0].Step)
	}
	for _, tc := range []struct {
		ids      []int
		throttle int
		want     string
	}{
		{[]int{4, 5, 6, 15, 7}, 2, "[4-7,15%2]"},
		{[]int{3}, 0, "3"},
		{[]int{3}, 1, "[3%1]"},
		{[]int{1, 3}, 0, "[1,3]"},
	} {
		if got := FormatTaskIDs(tc.ids, tc.throttle); got != tc.want {
			t.Errorf("FormatTaskIDs(%v, %d) = %q, want %q", tc.ids, tc.throttle, got, tc.want)
		}
	}
}

// sbatch checks --array before it calls the controllers, where a CLI
// server (in a node's agent) runs it for any local user: it lists no
// indices, however many the text names.
func TestCheckArrayListsNoIndices(t *testing.T) {
	const spec = "0-4000000"
	if err := CheckArray(spec, MaxArraySizeCeiling); err != nil {
		t.Fatalf("CheckArray(%q): %v; want it taken", spec, err)
	}
	if allocs := testing.AllocsPerRun(5, func() { CheckArray(spec, MaxArraySizeCeiling) }); allocs > 10 {
		t.Errorf("CheckArray(%q) made %v allocations; want a few, not one per index", spec, allocs)
	}
	for in, want := range map[string]string{
		"0-2147483646":            "over 4000000, the highest any cluster allows",
		"0-4000000,0-4000000":     "list over 4000001 indices",
		"2147483640-2147483646%1": "over 4000000",
	} {
		if err := CheckArray(in, MaxArraySizeCeiling); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckArray(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}
