package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	insecureCreds "google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/pki"
)

// DefaultAddr is the controller's address when nothing else names one.
const DefaultAddr = "localhost:7817"

// ResolveAddrs picks the controllers to talk to: the --server flag, else
// $PHX_SERVER, else every controller line of the config file (conf may be
// nil when there is none), else DefaultAddr. Flag and variable take a
// comma-separated list. A host without a port gets the default port (for
// the config, its ControllerPort= or SlurmctldPort=).
func ResolveAddrs(flag, env string, conf []byte) []string {
	for _, list := range []string{flag, env} {
		if addrs := apiclient.SplitAddrs(list); len(addrs) > 0 {
			for i, a := range addrs {
				addrs[i] = apiclient.WithPort(a)
			}
			return addrs
		}
	}
	if addrs := confAddrs(conf); len(addrs) > 0 {
		return addrs
	}
	return []string{DefaultAddr}
}

// confAddrs reads the SlurmctldHost=NAME[(ADDR)], ControllerHost= and
// ControllerAddr= lines, in order, and the API port from ControllerPort= or
// SlurmctldPort=. It is not a full config parser: phx reads only these.
func confAddrs(conf []byte) []string {
	var hosts []string
	port := apiclient.DefaultPort
	for _, line := range strings.Split(string(conf), "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, field := range strings.Fields(line) {
			key, val, ok := strings.Cut(field, "=")
			if !ok || val == "" {
				continue
			}
			switch strings.ToLower(key) {
			case "slurmctldhost", "controllerhost", "controlleraddr":
				hosts = append(hosts, hostOf(val))
			case "slurmctldport", "controllerport":
				port = val
			}
		}
	}
	for i, h := range hosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			hosts[i] = net.JoinHostPort(strings.Trim(h, "[]"), port)
		}
	}
	return hosts
}

// hostOf returns ADDR of NAME(ADDR), else NAME.
func hostOf(v string) string {
	if name, addr, ok := strings.Cut(v, "("); ok {
		if addr = strings.TrimSuffix(addr, ")"); addr != "" {
			return addr
		}
		return name
	}
	return v
}

// conn is a client for one command invocation.
type conn struct {
	k       *commands
	hint    string // the leader this run started from
	addrs   []string
	timeout time.Duration
	stale   bool
	shared  bool // cc is a CLI server's (System.Shared): not this command's to close
	cc      *apiclient.Conn
	api     phalanxv1.ControllerServiceClient
}

// dial connects to the controllers chosen by the global flags, environment
// and config. Connecting is lazy: errors show up at the first call.
func (k *commands) dial(c *ucli.Context) (*conn, error) {
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if sh := k.sys.Shared; sh != nil {
		return &conn{k: k, addrs: sh.Conn.Addrs(), timeout: timeout, stale: c.Bool("stale"), cc: sh.Conn, shared: true,
			api: phalanxv1.NewControllerServiceClient(credentialed{sh.Conn, sh.Token})}, nil
	}
	conf, _ := k.sys.ReadFile(k.sys.ConfigPath) // a missing config is normal
	addrs := ResolveAddrs(c.String("server"), k.sys.Getenv("PHX_SERVER"), conf)
	hint := k.leaderHint(addrs)
	transport, err := k.transport()
	if err != nil {
		return nil, err
	}
	cc, err := apiclient.Dial(addrs, apiclient.WithLeader(hint), apiclient.WithDialOptions(transport, grpc.WithPerRPCCredentials(k.credentials())))
	if err != nil {
		return nil, err
	}
	return &conn{k: k, hint: hint, addrs: addrs, timeout: timeout, stale: c.Bool("stale"), cc: cc, api: phalanxv1.NewControllerServiceClient(cc)}, nil
}

// Close keeps the leader learned for the next run, and closes the
// connections.
func (cn *conn) Close() error {
	if cn.shared {
		return nil
	}
	cn.k.keepLeader(cn.addrs, cn.hint, cn.cc.Leader())
	return cn.cc.Close()
}

// transport is how phx reaches the controllers: TLS, trusting the
// cluster CA of $PHX_CA_CERT (default /etc/phalanx/tls/ca.crt) and only a
// controller's certificate from it. PHX_INSECURE=1 talks plaintext, to
// controllers run with --insecure (debugging only); there is no fallback
// from one to the other, so a credential never crosses the network in
// clear unless asked.
func (k *commands) transport() (grpc.DialOption, error) {
	v := k.sys.Getenv("PHX_INSECURE")
	return transportFor(k.sys.Getenv("PHX_CA_CERT"), v != "" && v != "0")
}

// transportFor is TLS trusting caCert (defaultCACert when ""), or
// plaintext when insecure.
func transportFor(caCert string, insecure bool) (grpc.DialOption, error) {
	if insecure {
		return grpc.WithTransportCredentials(insecureCreds.NewCredentials()), nil
	}
	m, err := pki.Load(pki.TrustFiles(orDefault(caCert, defaultCACert())))
	if err != nil {
		return nil, fmt.Errorf("%w; set PHX_CA_CERT to the cluster's ca.crt (phx dev prints it), or PHX_INSECURE=1 for a controller run with --insecure", err)
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(m.ClientConfig())), nil
}

// defaultCACert is the CA phx trusts when $PHX_CA_CERT is unset.
func defaultCACert() string { return filepath.Join(pki.DefaultDir, pki.CACertFile) }

// credentials is where this invocation's credential comes from: $PHX_TOKEN
// when set (as Slurm's clients use $SLURM_JWT), else the auth socket of a
// Phalanx daemon on this host ($PHX_AUTH_SOCKET, or auth.DefaultSocket),
// which vouches for the uid the kernel reports.
func (k *commands) credentials() *auth.Source {
	if tok := k.sys.Getenv("PHX_TOKEN"); tok != "" {
		return auth.Static(tok)
	}
	path := k.sys.Getenv("PHX_AUTH_SOCKET")
	if path == "" {
		path = auth.DefaultSocket
	}
	return auth.Socket(path)
}

// call runs one RPC under the timeout and turns its error into a user-facing
// one.
func (cn *conn) call(ctx context.Context, rpc func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, cn.timeout)
	defer cancel()
	if cn.stale {
		ctx = apiclient.Stale(ctx)
	}
	return cn.userError(rpc(ctx))
}

// streamTimeout bounds a transfer (backup, restore), which --timeout, meant
// for one call, would cut short on a large state.
const streamTimeout = time.Hour

// callStream runs a streaming RPC under streamTimeout (or --timeout, when
// longer). Streams are served by the leader only: a replica that is not
// answers NotLeader, which teaches the connection who leads, and the call
// starts again there.
func (cn *conn) callStream(ctx context.Context, rpc func(ctx context.Context) error) error {
	return cn.streamWithin(ctx, false, rpc)
}

// streamWithin is callStream, without a time limit when endless (phx logs
// -f follows a task as long as it runs). rpc stops the retries by
// returning a noRetry.
func (cn *conn) streamWithin(ctx context.Context, endless bool, rpc func(ctx context.Context) error) error {
	if !endless {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(cn.timeout, streamTimeout))
		defer cancel()
	}
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if err = rpc(ctx); err == nil || apiclient.NotLeader(err) == nil || ctx.Err() != nil {
			break
		}
	}
	var nr *noRetry
	if errors.As(err, &nr) {
		err = nr.err
	}
	return cn.userError(err)
}

// noRetry is an error a stream's rpc returns when trying again would do
// harm (output already printed).
type noRetry struct{ err error }

func (e *noRetry) Error() string { return e.err.Error() }

// APIError is an error the controller returned about the request itself
// (invalid, not found, not satisfiable); its message is the server's.
type APIError struct {
	Code codes.Code
	Msg  string
}

func (e *APIError) Error() string { return e.Msg }

// where names the controllers tried, for messages.
func (cn *conn) where() string {
	if len(cn.addrs) == 1 {
		return "the controller at " + cn.addrs[0]
	}
	return "any of the controllers at " + strings.Join(cn.addrs, ",")
}

func (cn *conn) userError(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.Unavailable:
		if apiclient.NotLeader(err) != nil {
			return fmt.Errorf("%s (tried %s within %s)", st.Message(), strings.Join(cn.addrs, ","), cn.timeout)
		}
		if msg := st.Message(); strings.Contains(msg, "authentication handshake failed") {
			return fmt.Errorf("TLS with %s failed: %s (is $PHX_CA_CERT this cluster's ca.crt?)", cn.where(), msg)
		}
		if v := cn.k.sys.Getenv("PHX_INSECURE"); v != "" && v != "0" && strings.Contains(st.Message(), "preface") {
			return fmt.Errorf("cannot reach %s in plaintext (PHX_INSECURE is set; a controller with TLS closes plaintext connections: unset it)", cn.where())
		}
		return fmt.Errorf("cannot reach %s (is phalanx-controller running? set PHX_SERVER or --server)", cn.where())
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s did not answer within %s (retry, or raise --timeout)", strings.TrimPrefix(cn.where(), "any of "), cn.timeout)
	case codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound, codes.Aborted,
		codes.AlreadyExists, codes.PermissionDenied, codes.Unauthenticated, codes.OutOfRange, codes.ResourceExhausted:
		return &APIError{Code: st.Code(), Msg: st.Message()}
	}
	return fmt.Errorf("%s: %s (%s)", strings.TrimPrefix(cn.where(), "any of "), st.Message(), st.Code())
}

// isNotFound reports whether err is the controller's NotFound.
func isNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == codes.NotFound
}
