package controller

import (
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/auth"
)

// One replica per data dir: a second one fails at once, saying why.
func TestDataDirIsLocked(t *testing.T) {
	s := newTestServer(t, Config{})
	_, err := New(Config{DataDir: s.cfg.DataDir, RaftAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", AuthKeys: auth.Ring(testKey)})
	if err == nil {
		t.Fatal("a second controller started on a data dir in use")
	}
	if want := "in use by another phalanx-controller"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}
