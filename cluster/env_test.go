package cluster

import (
	"reflect"
	"testing"
)

func TestEnviron(t *testing.T) {
	// By name, not by string: "A" sorts before "A1" though "A1=" < "A=".
	env := map[string]string{"A1": "x", "A": "y", "PATH": "/bin:/usr/bin", "EMPTY": ""}
	want := []string{"A=y", "A1=x", "EMPTY=", "PATH=/bin:/usr/bin"}
	got := Environ(env)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Environ = %q; want %q", got, want)
	}
	if back := EnvMap(got); !reflect.DeepEqual(back, env) {
		t.Errorf("EnvMap(Environ(env)) = %v; want %v", back, env)
	}
	if got := EnvMap([]string{"X=1", "X=2=3", "BARE"}); !reflect.DeepEqual(got, map[string]string{"X": "2=3", "BARE": ""}) {
		t.Errorf("EnvMap: a later NAME wins, a value may hold '=', a bare NAME is empty: %v", got)
	}
	list, legacy := []string{"A=1"}, map[string]string{"A": "2"}
	if got := EnvOf(list, legacy); got["A"] != "1" {
		t.Errorf("EnvOf prefers the list: %v", got)
	}
	if got := EnvOf(nil, legacy); got["A"] != "2" {
		t.Errorf("EnvOf without a list takes the map: %v", got)
	}
	if got := EnvironOf(nil, legacy); !reflect.DeepEqual(got, []string{"A=2"}) {
		t.Errorf("EnvironOf without a list: %v", got)
	}
	if Environ(nil) != nil || EnvMap(nil) != nil {
		t.Error("an empty environment must stay nil")
	}
}
