package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// DefaultAddr is the controller's address when nothing else names one.
const DefaultAddr = "localhost:7817"

const defaultPort = "7817"

// ResolveAddr picks the controller address: the --server flag, else
// $PHX_SERVER, else the first controller line of the config file (conf may
// be nil when there is none), else DefaultAddr. A host without a port gets
// the default port.
func ResolveAddr(flag, env string, conf []byte) string {
	for _, a := range []string{flag, env, confAddr(conf)} {
		if a = strings.TrimSpace(a); a != "" {
			return withPort(a)
		}
	}
	return DefaultAddr
}

// confAddr reads the first SlurmctldHost=NAME[(ADDR)], ControllerHost= or
// ControllerAddr= line; it is not a full config parser.
func confAddr(conf []byte) string {
	for _, line := range strings.Split(string(conf), "\n") {
		line = strings.TrimSpace(line)
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "slurmctldhost", "controllerhost", "controlleraddr":
		default:
			continue
		}
		val, _, _ = strings.Cut(val, "#")
		val = strings.TrimSpace(val)
		if name, addr, ok := strings.Cut(val, "("); ok {
			if addr = strings.TrimSuffix(addr, ")"); addr != "" {
				return addr
			}
			return name
		}
		return val
	}
	return ""
}

func withPort(a string) string {
	if _, _, err := net.SplitHostPort(a); err == nil {
		return a
	}
	return net.JoinHostPort(strings.Trim(a, "[]"), defaultPort)
}

// conn is a client for one command invocation.
type conn struct {
	addr    string
	timeout time.Duration
	cc      *grpc.ClientConn
	api     phalanxv1.ControllerServiceClient
}

// dial connects to the controller chosen by the global flags, environment
// and config. Connecting is lazy: errors show up at the first call.
func (k *commands) dial(c *ucli.Context) (*conn, error) {
	conf, _ := k.sys.ReadFile(k.sys.ConfigPath) // a missing config is normal
	addr := ResolveAddr(c.String("server"), k.sys.Getenv("PHX_SERVER"), conf)
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("controller address %q: %w", addr, err)
	}
	return &conn{addr: addr, timeout: timeout, cc: cc, api: phalanxv1.NewControllerServiceClient(cc)}, nil
}

func (cn *conn) Close() error { return cn.cc.Close() }

// call runs one RPC under the timeout and turns its error into a user-facing
// one.
func (cn *conn) call(ctx context.Context, rpc func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, cn.timeout)
	defer cancel()
	return cn.userError(rpc(ctx))
}

// APIError is an error the controller returned about the request itself
// (invalid, not found, not satisfiable); its message is the server's.
type APIError struct {
	Code codes.Code
	Msg  string
}

func (e *APIError) Error() string { return e.Msg }

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
		if strings.Contains(st.Message(), "not the leader") {
			return errors.New(st.Message())
		}
		return fmt.Errorf("cannot reach the controller at %s (is phalanx-controller running? set PHX_SERVER or --server)", cn.addr)
	case codes.DeadlineExceeded:
		return fmt.Errorf("the controller at %s did not answer within %s (retry, or raise --timeout)", cn.addr, cn.timeout)
	case codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound, codes.Aborted,
		codes.AlreadyExists, codes.PermissionDenied, codes.OutOfRange:
		return &APIError{Code: st.Code(), Msg: st.Message()}
	}
	return fmt.Errorf("controller at %s: %s (%s)", cn.addr, st.Message(), st.Code())
}

// isNotFound reports whether err is the controller's NotFound.
func isNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == codes.NotFound
}
