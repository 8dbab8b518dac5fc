package containerd

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEffectiveCaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status")
	os.WriteFile(path, []byte("Name:\tx\nCapPrm:\t000001ffffffffff\nCapEff:\t000001fffeffffff\n"), 0o644)
	mask, err := effectiveCaps(path)
	if err != nil {
		t.Fatal(err)
	}
	if mask != 0x1fffeffffff || mask&(1<<capSysResource) != 0 {
		t.Errorf("mask = %x; CAP_SYS_RESOURCE must read as absent", mask)
	}
	os.WriteFile(path, []byte("Name:\tx\n"), 0o644)
	if _, err := effectiveCaps(path); err == nil {
		t.Error("no CapEff line: want an error")
	}
}
