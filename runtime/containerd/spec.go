package containerd

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// SpecConfig is the node-wide part of every container's OCI spec.
type SpecConfig struct {
	// CDISpecDirs are searched for CDI spec files; DefaultCDISpecDirs when
	// nil.
	CDISpecDirs []string
	// ShmSize is the size= option of the /dev/shm tmpfs: bytes with an
	// optional k, m or g suffix, or a percentage of RAM ("50%").
	// DefaultShmSize when empty.
	ShmSize string
	// Hostname is the container's hostname, normally the host's.
	Hostname string
	// Memlock and Nofile are RLIMIT_MEMLOCK and RLIMIT_NOFILE, soft and
	// hard; DefaultMemlock and DefaultNofile when zero.
	Memlock, Nofile uint64
	// Logger receives warnings (no CDI spec for the GPUs); slog.Default()
	// when nil.
	Logger *slog.Logger
}

// Defaults for SpecConfig.
var (
	DefaultCDISpecDirs = []string{"/etc/cdi", "/var/run/cdi"}
)

// DefaultShmSize is the /dev/shm size when SpecConfig.ShmSize is empty.
const DefaultShmSize = "50%"

// Default resource limits: memlock unlimited for RDMA memory registration,
// nofile at the kernel's default fs.nr_open.
const (
	DefaultMemlock = ^uint64(0)
	DefaultNofile  = 1 << 20
)

// SpecOpts returns the OCI spec options that give a container the shape the
// package doc describes for spec, except the image's own configuration,
// which Start applies first. The options need no daemon: apply them with
// oci.GenerateSpec to see the resulting spec.
func SpecOpts(spec runtime.Spec, cfg SpecConfig) ([]oci.SpecOpts, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("task %q: empty argv: %w", spec.ID, cluster.ErrInvalid)
	}
	cfg = cfg.withDefaults()
	opts := []oci.SpecOpts{
		oci.WithProcessArgs(spec.Argv...),
		oci.WithEnv(spec.Env),
		oci.WithHostNamespace(specs.NetworkNamespace),
		oci.WithHostNamespace(specs.PIDNamespace),
		oci.WithHostHostsFile,
		oci.WithHostResolvconf,
		withShmSize(cfg.ShmSize),
		withRlimit("RLIMIT_MEMLOCK", cfg.Memlock),
		withRlimit("RLIMIT_NOFILE", cfg.Nofile),
		oci.WithMounts(bindMounts(spec.Mounts)),
	}
	if cfg.Hostname != "" {
		opts = append(opts, oci.WithHostname(cfg.Hostname))
	}
	if spec.WorkDir != "" {
		opts = append(opts, oci.WithProcessCwd(spec.WorkDir))
	}
	if spec.UID >= 0 || spec.GID >= 0 {
		uid, gid := max(spec.UID, 0), max(spec.GID, 0)
		opts = append(opts, oci.WithUIDGID(uint32(uid), uint32(gid)), withGroups(runtime.Groups(uid, gid)))
	}
	devices, err := cdiDevices(spec, cfg)
	if err != nil {
		return nil, err
	}
	if devices != nil {
		opts = append(opts, devices)
	}
	return opts, nil
}

func (c SpecConfig) withDefaults() SpecConfig {
	if c.CDISpecDirs == nil {
		c.CDISpecDirs = DefaultCDISpecDirs
	}
	if c.ShmSize == "" {
		c.ShmSize = DefaultShmSize
	}
	if c.Memlock == 0 {
		c.Memlock = DefaultMemlock
	}
	if c.Nofile == 0 {
		c.Nofile = DefaultNofile
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func bindMounts(ms []runtime.Mount) []specs.Mount {
	out := make([]specs.Mount, 0, len(ms))
	for _, m := range ms {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		out = append(out, specs.Mount{
			Destination: m.Target,
			Type:        "bind",
			Source:      m.Source,
			Options:     []string{"rbind", "rprivate", mode},
		})
	}
	return out
}

// withShmSize replaces the default spec's small /dev/shm with a tmpfs of the
// given size.
func withShmSize(size string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		shm := specs.Mount{
			Destination: "/dev/shm",
			Type:        "tmpfs",
			Source:      "shm",
			Options:     []string{"nosuid", "noexec", "nodev", "mode=1777", "size=" + size},
		}
		for i, m := range s.Mounts {
			if m.Destination == "/dev/shm" {
				s.Mounts[i] = shm
				return nil
			}
		}
		s.Mounts = append(s.Mounts, shm)
		return nil
	}
}

// withRlimit sets a resource limit, soft and hard, replacing the default's.
func withRlimit(kind string, limit uint64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		rl := specs.POSIXRlimit{Type: kind, Hard: limit, Soft: limit}
		for i, r := range s.Process.Rlimits {
			if r.Type == kind {
				s.Process.Rlimits[i] = rl
				return nil
			}
		}
		s.Process.Rlimits = append(s.Process.Rlimits, rl)
		return nil
	}
}

// withGroups sets the task's supplementary groups: its user's on the host
// (the image's /etc/group does not know the cluster's users).
func withGroups(gids []uint32) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.User.AdditionalGids = gids
		return nil
	}
}
