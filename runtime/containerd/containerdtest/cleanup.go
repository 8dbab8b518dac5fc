package containerdtest

import (
	"context"
	"errors"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/namespaces"
)

// removeContainers kills and deletes every container in every namespace,
// so that no shim outlives the daemon.
func (d *Daemon) removeContainers() error {
	c, err := containerd.New(d.Address, containerd.WithTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nss, err := c.NamespaceService().List(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range nss {
		nctx := namespaces.WithNamespace(ctx, ns)
		cs, err := c.Containers(nctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ctr := range cs {
			errs = append(errs, removeContainer(nctx, ctr))
		}
	}
	return errors.Join(errs...)
}

func removeContainer(ctx context.Context, ctr containerd.Container) error {
	if task, err := ctr.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
	}
	err := ctr.Delete(ctx, containerd.WithSnapshotCleanup)
	if errdefs.IsNotFound(err) {
		return nil
	}
	return err
}
