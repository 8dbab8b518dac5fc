// Package containerdtest runs a private containerd daemon for tests and
// gives it a tiny busybox image built on the spot.
//
// Start launches `containerd` with its own root, state directory and unix
// socket in a temporary directory, with the CRI plugin disabled, so that it
// never touches the system's daemon, and stops it when the test ends. It
// needs root and the containerd, containerd-shim-runc-v2 and runc binaries;
// without them the test is skipped, except under CI=true, where it fails:
// CI must provide them (Debian/Ubuntu packages: containerd, runc,
// busybox-static).
//
// ImportBusybox builds an OCI image whose only layer holds the host's
// static /bin/busybox (package busybox-static) and its applet links, imports
// it through the client and unpacks it, so tests need no registry.
package containerdtest
