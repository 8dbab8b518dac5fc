package controller

import (
	"context"
	"crypto/x509"
	"errors"
	"os"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/pki"
)

// Authentication and authorisation of API calls.
//
// Every method of the controller service needs a credential (package
// auth); the caller's identity is taken from it alone and put in the
// call's context. With TLS, the node service takes only the certificate of
// a node (package pki), which names it: the node API takes a call about a
// node only from that node's agent. Without TLS (in-process tests, and
// --insecure) agents sign node credentials with the cluster key instead,
// and an administrator's credential acts for any node.
//
// Three levels, as Slurm's admin levels: every authenticated user may read
// everything and change their own jobs; operators (OperatorUsers) may
// change any job; administrators (root, the controller's own user, and
// AdminUsers) may also change the cluster itself. A refused call is
// PermissionDenied with what was attempted, and an audit line in the log.

// Method prefixes of the two services.
const (
	userServicePrefix = "/phalanx.v1.ControllerService/"
	nodeServicePrefix = "/phalanx.v1.NodeService/"
)

// authenticate verifies the call's credential and returns ctx with the
// caller's identity. With Insecure, calls carry none.
func (a *access) authenticate(ctx context.Context, method string) (context.Context, error) {
	userAPI := strings.HasPrefix(method, userServicePrefix)
	if a.insecure || !userAPI && !strings.HasPrefix(method, nodeServicePrefix) {
		return ctx, nil
	}
	if a.tls != nil && (!userAPI || method == statusMethod) {
		// With TLS the node API takes certificates only: every host holds
		// the cluster key, so root on any node could sign a node's
		// credential, or an administrator's, and speak for another node.
		id, ok, err := a.nodeFromCertificate(ctx, method)
		if err != nil {
			return nil, err
		}
		if !ok && userAPI {
			return a.authenticateUser(ctx, method) // a user asking a replica's status
		}
		if !ok {
			a.audit(ctx, method, "unauthenticated", "err", "no node certificate")
			return nil, toStatus(cluster.Errorf(cluster.ErrUnauthenticated,
				"the node API takes calls only with a node's certificate (`phalanx-controller ca issue node NAME`); a credential signed with the cluster key is not enough"))
		}
		return auth.NewContext(ctx, id), nil
	}
	return a.authenticateUser(ctx, method)
}

// statusMethod is the one call of the user API a node may make too: its
// agent asks the replicas which leads (apiclient's probes).
const statusMethod = phalanxv1.ControllerService_GetControllerStatus_FullMethodName

// authenticateUser verifies a credential signed with the cluster key: a
// user's, or (without TLS) a node's on the node API and statusMethod.
func (a *access) authenticateUser(ctx context.Context, method string) (context.Context, error) {
	userAPI := strings.HasPrefix(method, userServicePrefix)
	id, err := a.keys.Verify(auth.Incoming(ctx), a.clock.Now())
	if err != nil {
		a.audit(ctx, method, "unauthenticated", "err", err)
		return nil, toStatus(cluster.Errorf(cluster.ErrUnauthenticated, "%s", authAdvice(err)))
	}
	if userAPI && id.Kind == auth.KindNode && method != statusMethod {
		a.audit(ctx, method, "permission denied", "node", id.Node)
		return nil, toStatus(cluster.Errorf(cluster.ErrPermission, "permission denied: a node credential (%s) is for the node API only", id))
	}
	ctx = auth.NewContext(ctx, id)
	if what, ok := adminCalls[method]; ok {
		if err := a.require(ctx, levelAdmin, what); err != nil {
			return nil, toStatus(err)
		}
	}
	return ctx, nil
}

// nodeFromCertificate returns the node a node API call comes from, by the
// certificate it was made with: its agent's (a node certificate), or,
// for a call another replica forwarded (a controller's certificate), the
// node that replica found in its caller's. ok is false when the call came
// with no certificate, or a controller's without a forwarded node: its
// credential decides. A certificate that fails the checks (revoked or
// expired since the connection was made) is refused.
func (a *access) nodeFromCertificate(ctx context.Context, method string) (auth.Identity, bool, error) {
	chain := peerCertificates(ctx)
	if len(chain) == 0 {
		return auth.Identity{}, false, nil
	}
	p, err := a.tls.Check(chain, 0)
	if err != nil {
		a.audit(ctx, method, "unauthenticated", "err", err)
		return auth.Identity{}, false, toStatus(cluster.Errorf(cluster.ErrUnauthenticated, "%v", err))
	}
	switch p.Kind {
	case pki.KindNode:
		return auth.NodeIdentity(p.Name), true, nil
	case pki.KindController:
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get(certNodeHeader); len(v) == 1 {
			return auth.NodeIdentity(v[0]), true, nil
		}
	}
	return auth.Identity{}, false, nil
}

// certNodeHeader, on a node API call one replica forwards to the leader,
// names the node whose certificate the forwarding replica checked. The
// leader believes it only from a peer with a controller's certificate;
// forward never passes on a caller's own.
const certNodeHeader = "phalanx-cert-node"

// peerCertificates returns the certificate chain the caller presented on
// a TLS connection (none on plaintext).
func peerCertificates(ctx context.Context) []*x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
		return info.State.PeerCertificates
	}
	return nil
}

// authAdvice turns a verification error into what to do about it.
func authAdvice(err error) string {
	switch {
	case errors.Is(err, auth.ErrNoCredential):
		return "no credential: every call needs one (phx gets it from the auth socket, or from $PHX_TOKEN)"
	case errors.Is(err, auth.ErrExpired):
		return err.Error() + ": get a new one (`phx scontrol token` for $PHX_TOKEN)"
	case errors.Is(err, auth.ErrWrongKey):
		return err.Error() + " (is the cluster key the same on every host?)"
	}
	// Not a credential Phalanx issued, or one changed since: the key is
	// not in question.
	return err.Error() + " (not a credential Phalanx issued: check $PHX_TOKEN, or get one with `phx scontrol token`)"
}

// authStream is a server stream whose context carries the identity.
type authStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (a authStream) Context() context.Context { return a.ctx }

// level is what a caller may do.
type level int

const (
	levelUser level = iota
	levelOperator
	levelAdmin
)

var levelNames = [...]string{levelUser: "user", levelOperator: "operator", levelAdmin: "administrator"}

// levelsWithArticle are the levels after "is": by sound, "a user".
var levelsWithArticle = [...]string{levelUser: "a user", levelOperator: "an operator", levelAdmin: "an administrator"}

// caller returns the call's identity and level. Without authentication
// (Insecure) everyone is an administrator.
func (a *access) caller(ctx context.Context) (auth.Identity, level, bool) {
	id, ok := auth.FromContext(ctx)
	if !ok {
		return auth.Identity{}, levelAdmin, false
	}
	switch {
	case id.Kind == auth.KindNode: // a node is no user: its uid means nothing
		return id, levelUser, true
	case id.UID == 0, id.UID == uint32(os.Getuid()), id.Kind == auth.KindController, slices.Contains(a.admins, id.User):
		return id, levelAdmin, true
	case slices.Contains(a.operators, id.User):
		return id, levelOperator, true
	}
	return id, levelUser, true
}

// require refuses the call unless its caller has at least lvl; what says
// what was attempted.
func (a *access) require(ctx context.Context, lvl level, what string) error {
	id, have, ok := a.caller(ctx)
	if !ok || have >= lvl {
		return nil
	}
	a.audit(ctx, what, "permission denied", "user", id.User, "uid", id.UID, "needs", levelNames[lvl])
	return cluster.Errorf(cluster.ErrPermission, "permission denied: %s is for %ss; %s is %s", what, levelNames[lvl], id, levelsWithArticle[have])
}

// audit logs a refused call.
func (a *access) audit(ctx context.Context, what, outcome string, args ...any) {
	from := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		from = p.Addr.String()
	}
	a.log.Warn("audit: "+outcome, append([]any{"call", what, "from", from}, args...)...)
}

// Calls only administrators may make, and what they do, for messages.
var adminCalls = map[string]string{
	phalanxv1.ControllerService_AddController_FullMethodName:      "adding a controller (scontrol raft add)",
	phalanxv1.ControllerService_RemoveController_FullMethodName:   "removing a controller (scontrol raft remove)",
	phalanxv1.ControllerService_RegisterController_FullMethodName: "recording a controller's addresses",
	phalanxv1.ControllerService_TransferLeadership_FullMethodName: "moving leadership (scontrol raft transfer)",
	phalanxv1.ControllerService_Backup_FullMethodName:             "backing up the state (scontrol backup)",
	phalanxv1.ControllerService_Restore_FullMethodName:            "restoring the state (scontrol restore)",
	phalanxv1.ControllerService_UpdatePartition_FullMethodName:    "changing a partition (scontrol update PartitionName=...)",
	phalanxv1.ControllerService_Reconfigure_FullMethodName:        "applying the config file again (scontrol reconfigure)",
}

// controllerIdentity is who a controller is when it calls a peer.
func controllerIdentity() auth.Identity {
	return auth.Identity{User: "phalanx-controller", UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Kind: auth.KindController}
}

// peerSource signs the credentials of this replica's own calls to its
// peers; nil without authentication.
func peerSource(cfg Config) *auth.Source {
	if cfg.Insecure {
		return nil
	}
	return auth.Issuer(cfg.AuthKeys, controllerIdentity(), auth.LocalLifespan)
}

// asController returns ctx (outgoing) carrying this replica's own
// credential. A forwarded call carries its caller's instead.
func asController(ctx context.Context, src *auth.Source) context.Context {
	if src == nil {
		return ctx
	}
	tok, err := src.Token(ctx)
	if err != nil {
		return ctx // the peer refuses the call, and says why
	}
	return auth.Outgoing(ctx, tok)
}
