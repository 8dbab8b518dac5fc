// Package pki is the cluster's certificate authority and the TLS between
// Phalanx components.
//
// Every cluster has its own CA: an ECDSA P-256 key and a self-signed
// certificate, made once by `phalanx-controller ca init` in the TLS
// directory (/etc/phalanx/tls by default): ca.crt, which every host and
// every remote client holds, and ca.key, which only the host that issues
// certificates keeps (mode 0400). The CA issues two kinds of certificate,
// named by the component they are for: controller.crt/controller.key for a
// controller replica, node.crt/node.key for a node agent. A certificate
// names its holder (the replica's ID, the node's name) in its Common Name
// and, with its kind, in a URI (phalanx://node/gpu001), and is the only
// proof of it: a node cannot speak for another node, and nothing but a
// controller can serve the controller API or join the Raft group.
//
// Verification is this package's own, not Go's hostname check: a peer's
// certificate must chain to a CA of ca.crt, be within its validity, not be
// listed in ca.crl (a revocation list the CA signs, `phalanx-controller ca
// revoke`), and be of the kind the connection needs. A controller's
// certificate is a controller's whatever address it is reached at: only
// the CA's holder makes one. Each refusal says which of these failed, for
// whom, and what fixes it.
//
// Rotation needs no downtime. A daemon reloads its files on SIGHUP
// (Material.ReloadOn) and uses them for every new connection: a renewed
// certificate at once, a CA bundle of old and new CA (ca.crt may hold
// several) while certificates move to the new CA, a new revocation list.
// A revoked or expired certificate is refused for every call, on
// connections made before the reload too (Material.Check).
package pki
