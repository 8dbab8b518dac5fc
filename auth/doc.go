// Package auth says who is calling: credentials signed with the cluster
// key, how a local user obtains one, and how the controller checks one.
//
// The model is Slurm's MUNGE plus auth/jwt. Every host of a cluster holds
// the same secret, the cluster key (a file of at least 32 random bytes,
// readable only by root: /etc/phalanx/auth.key by default, like
// /etc/munge/munge.key). A credential is a JSON Web Token signed with it
// (HS256, github.com/golang-jwt/jwt) that names a user and the user's uid
// and gid, and expires.
//
// Local users never handle the key. A Phalanx daemon on the host (the node
// agent, a controller, or phx dev) listens on a Unix socket,
// /run/phalanx/auth.sock. A client connects, the kernel tells the daemon the
// caller's uid and gid (SO_PEERCRED), and the daemon answers with a
// credential for that uid, valid for LocalLifespan. What a client claims
// about itself plays no part: the uid comes from the kernel, and the
// signature from a key the caller cannot read.
//
// Remote clients and scripts use tokens: `phx scontrol token` asks the
// controller to sign a credential with a longer lifespan (Slurm's
// `scontrol token`), which the client then sends from $PHX_TOKEN, as
// Slurm's clients send $SLURM_JWT. A token for another user is only signed
// for an administrator.
//
// Every call to the controller carries its credential in the
// "phalanx-auth" metadata. The controller verifies the signature and the
// expiry and takes the caller's identity from the credential only. A
// credential that is missing, forged or expired is refused, never
// replaced by another identity.
//
// Root on any host that holds the key can mint any credential, as with
// MUNGE: the key's protection is the cluster's.
package auth
