package containerd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

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
	address     string
	namespace   string
	snapshotter string
	spec        SpecConfig
	log         *slog.Logger
	node        string // labels its containers, which it alone takes over
	dir         string // state: the lease, fence files, keepers' logs
	taskIOExe   string // the I/O keeper's executable (taskio.go)

	leaseMu  sync.Mutex  // one Lease at a time
	leased   atomic.Bool // Lease was called: tasks started now are fenced
	unfenced atomic.Bool // Recover found a running task that is not fenced
}

var (
	_ runtime.Runtime   = (*Runtime)(nil)
	_ runtime.Recoverer = (*Runtime)(nil)
	_ runtime.Fencer    = (*Runtime)(nil)
)

// Labels on every container the runtime creates.
const (
	// labelLeased is "1" on a container whose task was started with a
	// lease: its keeper fences it.
	labelLeased = "phalanx.dev/leased"
	// labelNode names the node whose agent started the container.
	labelNode = "phalanx.dev/node"
	// labelSignals lists the signals delivered to the task, e.g. "15,9",
	// so that an exit code of 128+n is told from death by signal n after
	// the agent restarts too.
	labelSignals = "phalanx.dev/signals"
)

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

// WithNode sets the node the runtime runs containers for (default: the
// containers' hostname, WithHostname). Its containers are labelled with it, and Recover takes over
// only those: agents that share one daemon and namespace (phx dev's) each
// find their own.
func WithNode(name string) Option {
	return func(r *Runtime) { r.node = name }
}

// WithStateDir sets the runtime's state directory, where it keeps the
// node's lease (runtime.Fencer), the fence files of fenced tasks and the
// I/O keepers' logs. Without one the runtime does not fence.
func WithStateDir(dir string) Option {
	return func(r *Runtime) { r.dir = dir }
}

// WithTaskIOExecutable sets the executable that keeps a container's output
// and fence (default: this process's own executable, which must call
// RunTaskIOIfAsked first thing in main).
func WithTaskIOExecutable(path string) Option {
	return func(r *Runtime) { r.taskIOExe = path }
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
	r := &Runtime{address: address, namespace: namespace, snapshotter: DefaultSnapshotter, log: slog.Default()}
	r.spec.Hostname, _ = os.Hostname()
	for _, o := range opts {
		o(r)
	}
	if r.node == "" {
		r.node = r.spec.Hostname
	}
	if r.taskIOExe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("containerd: find this executable, the containers' I/O keeper: %w", err)
		}
		r.taskIOExe = exe
	}
	if r.dir != "" {
		if err := os.MkdirAll(r.dir, 0o700); err != nil {
			return nil, fmt.Errorf("containerd: state directory: %w", err)
		}
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
// left with the same ID is deleted first. Once the runtime holds a lease,
// the task is fenced by its I/O keeper.
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
	labels := map[string]string{labelNode: r.node}
	if r.leased.Load() {
		labels[labelLeased] = "1"
	}
	container, err := r.client.NewContainer(ctx, spec.ID,
		containerd.WithContainerLabels(labels),
		containerd.WithImage(img),
		containerd.WithSnapshotter(r.snapshotter),
		containerd.WithNewSnapshot(spec.ID, img),
		containerd.WithNewSpec(append([]oci.SpecOpts{oci.WithImageConfig(img)}, opts...)...),
	)
	if err != nil {
		return nil, fmt.Errorf("task %q: create container: %w", spec.ID, err)
	}
	t, err := r.startTask(ctx, spec, container, labels[labelLeased] == "1")
	if err != nil {
		container.Delete(context.WithoutCancel(ctx), containerd.WithSnapshotCleanup)
		return nil, err
	}
	return t, nil
}
