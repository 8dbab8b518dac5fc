// Package containerd runs tasks as containerd containers, for jobs that
// name an image.
//
// Every container is shaped for distributed training on bare metal:
//
//   - the host's network namespace, /etc/hosts and /etc/resolv.conf, and its
//     hostname, because NCCL and RDMA need the host's interfaces;
//   - the host's PID namespace, as HPC container runtimes (Enroot, Pyxis) do:
//     the task's program is not PID 1, so SIGTERM reaches it with its usual
//     meaning, and the shim kills everything left when it exits;
//   - memlock unlimited (RDMA memory registration) and a large nofile limit;
//   - a /dev/shm tmpfs sized for NCCL and data loaders (default half of RAM);
//   - the task's GPUs injected through CDI (Container Device Interface) as
//     devices "nvidia.com/gpu=<index>" from the spec files in /etc/cdi and
//     /var/run/cdi (generate them with `nvidia-ctk cdi generate`). A host
//     without any CDI spec for nvidia.com/gpu starts the container without
//     GPUs and logs a warning; a spec that lacks a requested GPU is an error;
//   - the Spec's bind mounts, environment (merged over the image's), working
//     directory, and user.
//
// SpecOpts builds the OCI spec options for a Spec without a daemon, so the
// shape above is tested without containerd.
//
// The image must already be in the runtime's namespace; Start tries to pull
// a missing image and, failing, says how to import it. Output goes to the
// Spec's host files through the container's I/O keeper (taskio.go): this
// executable again, started by the shim as a containerd logging binary,
// which opens the files as the task's user and outlives the agent. The
// shim is never given a path to open as root. The two streams are separate
// pipes, so lines written close together may interleave out of order.
//
// Containers outlive the agent (runtime.Recoverer): a new run finds every
// container of its namespace through containerd (recover.go). With a state
// directory the runtime fences (runtime.Fencer): a container started once
// the node holds a lease is killed by its keeper when the lease ends.
//
// Limits a runtime without CAP_SYS_RESOURCE could not grant are lowered to
// the agent's own, with a warning.
//
// Signal reaches every process of the container (kill --all); Wait returns
// the init process's status; Close deletes the task (which ends its
// keeper), the container and its snapshot. A container left behind with the same ID by an earlier agent is
// deleted before a new one is created.
package containerd
