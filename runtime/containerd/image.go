package containerd

import (
	"context"
	"fmt"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/distribution/reference"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// image returns the image ref, unpacked for the runtime's snapshotter. A
// missing image is pulled; when that fails, the error says how to import it.
func (r *Runtime) image(ctx context.Context, ref string) (containerd.Image, error) {
	if ref == "" {
		return nil, fmt.Errorf("no image: %w", cluster.ErrInvalid)
	}
	img, err := r.lookup(ctx, ref)
	if errdefs.IsNotFound(err) {
		img, err = r.pull(ctx, ref)
	}
	if err != nil {
		return nil, err
	}
	unpacked, err := img.IsUnpacked(ctx, r.snapshotter)
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", ref, err)
	}
	if !unpacked {
		if err := img.Unpack(ctx, r.snapshotter); err != nil {
			return nil, fmt.Errorf("image %q: unpack for %s: %w", ref, r.snapshotter, err)
		}
	}
	return img, nil
}

// lookup finds ref as written, then in its normalised form
// ("busybox" is "docker.io/library/busybox:latest").
func (r *Runtime) lookup(ctx context.Context, ref string) (containerd.Image, error) {
	img, err := r.client.GetImage(ctx, ref)
	if !errdefs.IsNotFound(err) {
		return img, err
	}
	named, perr := reference.ParseDockerRef(ref)
	if perr != nil || named.String() == ref {
		return nil, err
	}
	return r.client.GetImage(ctx, named.String())
}

func (r *Runtime) pull(ctx context.Context, ref string) (containerd.Image, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return nil, fmt.Errorf("image %q: %v: %w", ref, err, cluster.ErrInvalid)
	}
	img, err := r.client.Pull(ctx, named.String(),
		containerd.WithPullUnpack, containerd.WithPullSnapshotter(r.snapshotter))
	if err != nil {
		return nil, fmt.Errorf("image %q is not in containerd namespace %q and pulling it failed (%v); "+
			"load it with `ctr -n %s images import <archive.tar>` or `ctr -n %s images pull %s`: %w",
			ref, r.namespace, err, r.namespace, r.namespace, named.String(), cluster.ErrNotFound)
	}
	return img, nil
}

// removeStale deletes a container (with its task and snapshot) left with id
// by an earlier run, and a snapshot left without its container.
func (r *Runtime) removeStale(ctx context.Context, id string) error {
	c, err := r.client.LoadContainer(ctx, id)
	if err == nil {
		r.log.Warn("deleting stale container", "id", id)
		if err := deleteContainer(ctx, c); err != nil {
			return fmt.Errorf("task %q: delete stale container: %w", id, err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("task %q: %w", id, err)
	}
	err = r.client.SnapshotService(r.snapshotter).Remove(ctx, id)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("task %q: remove stale snapshot: %w", id, err)
	}
	return nil
}

// deleteContainer kills and deletes c's task, if any, then c and its
// snapshot.
func deleteContainer(ctx context.Context, c containerd.Container) error {
	task, err := c.Task(ctx, nil)
	if err == nil {
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
	} else if !errdefs.IsNotFound(err) {
		return err
	}
	err = c.Delete(ctx, containerd.WithSnapshotCleanup)
	if err != nil && !errdefs.IsNotFound(err) {
		return err
	}
	return nil
}
