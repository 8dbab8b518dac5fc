package nodeagent

import (
	"os"
	"testing"

	"github.com/phalanx-hpc/phalanx/runtime/process"
)

// TestMain lets this test binary serve as the supervisor of the
// plain-process tasks its agents start, as phalanx-agent does.
func TestMain(m *testing.M) {
	process.RunShimIfAsked()
	os.Exit(m.Run())
}
