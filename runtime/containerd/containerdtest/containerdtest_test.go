package containerdtest_test

import (
	"testing"

	"github.com/phalanx-hpc/phalanx/runtime/containerd/containerdtest"
)

func TestImportBusybox(t *testing.T) {
	d := containerdtest.Start(t)
	const ref = "docker.io/phalanx/busybox:test"
	containerdtest.ImportBusybox(t, d, ref)
	client := d.Client(t)
	ctx := d.Context()
	img, err := client.GetImage(ctx, ref)
	if err != nil {
		t.Fatalf("GetImage: %v", err)
	}
	ok, err := img.IsUnpacked(ctx, containerdtest.Snapshotter)
	if err != nil || !ok {
		t.Errorf("IsUnpacked = %v, %v", ok, err)
	}
	cfg, err := img.Spec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Config.Env) != 1 || cfg.Config.Env[0] != "PATH=/bin" || len(cfg.Config.Entrypoint) != 0 {
		t.Errorf("image config = %+v", cfg.Config)
	}
}
