package containerd

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Name is what (*Runtime).Name returns.
const Name = "containerd"

// DefaultSnapshotter is the snapshotter used unless WithSnapshotter says
// otherwise.
const DefaultSnapshotter = "overlayfs"

// Runtime starts tasks as containers through a containerd daemon.
type Runtime struct {
	client      *containerd.Client
	namespace   string
	snapshotter string
	spec        SpecConfig
	log         *slog.Logger
}

var _ runtime.Runtime = (*Runtime)(nil)

// Option configures a Runtime.
type Option func(*Runtime)

// WithCDISpecDirs sets the directories searched for CDI spec files
// (default DefaultCDISpecDirs).
func WithCDISpecDirs(dirs ...string) Option {
	return func(r *Runtime) { r.spec.CDISpecDirs = append([]string{}, dirs...) }
}

// WithSnapshotter sets the snapshotter (default DefaultSnapshotter).
func WithSnapshotter(name string) Option {
	return func(r *Runtime) { r.snapshotter = name }
}

// WithShmSize sets the size of every container's /dev/shm (tmpfs size=
// syntax; default DefaultShmSize).
func WithShmSize(size string) Option {
	return func(r *Runtime) { r.spec.ShmSize = size }
}

// WithHostname sets the containers' hostname (default the host's).
func WithHostname(name string) Option {
	return func(r *Runtime) { r.spec.Hostname = name }
}

// WithRlimits sets RLIMIT_MEMLOCK and RLIMIT_NOFILE in every container
// (defaults DefaultMemlock, DefaultNofile; zero keeps a default).
func WithRlimits(memlock, nofile uint64) Option {
	return func(r *Runtime) { r.spec.Memlock, r.spec.Nofile = memlock, nofile }
}

// WithLogger sets where warnings go (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(r *Runtime) { r.log = l }
}

// New connects to the containerd daemon at address (a unix socket path) and
// returns a runtime that keeps its containers in namespace.
func New(ctx context.Context, address, namespace string, opts ...Option) (*Runtime, error) {
	if namespace == "" {
		return nil, fmt.Errorf("containerd: empty namespace: %w", cluster.ErrInvalid)
	}
	r := &Runtime{namespace: namespace, snapshotter: DefaultSnapshotter, log: slog.Default()}
	r.spec.Hostname, _ = os.Hostname()
	for _, o := range opts {
		o(r)
	}
	r.spec.Logger = r.log
	r.spec = clampRlimits(r.spec.withDefaults(), r.log)
	client, err := containerd.New(address, containerd.WithDefaultNamespace(namespace))
	if err != nil {
		return nil, fmt.Errorf("containerd at %s: %w", address, err)
	}
	if _, err := client.Version(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("containerd at %s: %w", address, err)
	}
	r.client = client
	return r, nil
}

// Name returns "containerd".
func (r *Runtime) Name() string { return Name }

// Close closes the connection to the daemon; containers keep running.
func (r *Runtime) Close() error { return r.client.Close() }

// ctx adds the runtime's namespace to ctx.
func (r *Runtime) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.namespace)
}

// Start creates the container for spec and starts its task. A container
// left with the same ID is deleted first.
func (r *Runtime) Start(ctx context.Context, spec runtime.Spec) (runtime.Task, error) {
	ctx = r.ctx(ctx)
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	opts, err := SpecOpts(spec, r.spec)
	if err != nil {
		return nil, err
	}
	img, err := r.image(ctx, spec.Image)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", spec.ID, err)
	}
	if err := r.removeStale(ctx, spec.ID); err != nil {
		return nil, err
	}
	container, err := r.client.NewContainer(ctx, spec.ID,
		containerd.WithImage(img),
		containerd.WithSnapshotter(r.snapshotter),
		containerd.WithNewSnapshot(spec.ID, img),
		containerd.WithNewSpec(append([]oci.SpecOpts{oci.WithImageConfig(img)}, opts...)...),
	)
	if err != nil {
		return nil, fmt.Errorf("task %q: create container: %w", spec.ID, err)
	}
	t, err := r.startTask(ctx, spec, container)
	if err != nil {
		container.Delete(context.WithoutCancel(ctx), containerd.WithSnapshotCleanup)
		return nil, err
	}
	return t, nil
}
