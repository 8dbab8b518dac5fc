package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/grpc"

	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/internal/cliwire"
)

// Server is the CLI server: it runs the served phx commands
// (cliwire.Served) for the local users who ask on its Unix socket, as phx
// would run them in their own process, with one connection to the
// controllers kept open for all of them. It runs in a daemon that holds the
// cluster key (phx dev, the node agent), beside the auth socket: a command
// carries a credential the daemon signs for the uid the kernel reports for
// the caller, exactly the one the caller would have fetched from the auth
// socket. Files are read by the caller's phx (see package cliwire), never
// by the daemon.
type Server struct {
	// Conn reaches the controllers, dialed with the transport phx would
	// use and no credentials of its own: each call carries its user's.
	Conn *apiclient.Conn
	Keys *auth.Keyring
	// CACert is the CA certificate phx would trust for this cluster
	// (pki's default when ""); Insecure when Conn talks plaintext.
	CACert   string
	Insecure bool
	// ConfigPath is the config file phx would read (DefaultConfigPath
	// when "").
	ConfigPath string
	Log        *slog.Logger
	// AliveInterval is how often a running command tells its caller it
	// runs (cliwire.KindAlive); cliwire.AliveInterval when 0.
	AliveInterval time.Duration
}

// NewServer dials addrs as phx does (TLS trusting caCert, or plaintext
// when insecure) and returns a Server on that connection.
func NewServer(addrs []string, caCert string, insecure bool, keys *auth.Keyring, log *slog.Logger) (*Server, error) {
	transport, err := transportFor(caCert, insecure)
	if err != nil {
		return nil, err
	}
	cc, err := apiclient.Dial(addrs, apiclient.WithDialOptions(transport))
	if err != nil {
		return nil, err
	}
	return &Server{Conn: cc, Keys: keys, CACert: caCert, Insecure: insecure, Log: log}, nil
}

// ServeBeside runs the CLI server on cli.sock beside authSocket, for a
// daemon that serves the auth socket (node agent, authd, controller): phx
// on the host hands it sbatch, squeue, sinfo, scancel and sacct, which it
// runs for the caller on one connection to the controllers (TLS trusting
// caCert, or plaintext when insecure). When it cannot, it says so and
// returns nil: phx then runs those commands itself.
func ServeBeside(authSocket string, controllers []string, caCert string, insecure bool, keys *auth.Keyring, log *slog.Logger) (stop func()) {
	srv, err := NewServer(controllers, caCert, insecure, keys, log)
	if err != nil {
		log.Warn("not serving phx's commands", "err", err)
		return nil
	}
	stop, err = ServeCLI(filepath.Join(filepath.Dir(authSocket), cliwire.SocketName), srv)
	if err != nil {
		srv.Conn.Close()
		log.Warn("not serving phx's commands", "err", err)
		return nil
	}
	return stop
}

// requestTimeout bounds reading a request.
const requestTimeout = 5 * time.Second

// maxCommands bounds the commands run at once (each may hold a file it
// read, up to cliwire.MaxFrame); more callers wait their turn.
const maxCommands = 256

// ServeCLI serves s on the Unix socket at path (made connectable by every
// local user, as the auth socket is) until the returned stop is called: at
// once, or, while another daemon on the host serves it, once that one stops
// (auth.Hold). stop cancels the commands still running and closes s.Conn.
func ServeCLI(path string, s *Server) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	slots := make(chan struct{}, maxCommands)
	release, err := auth.Hold(path, "CLI socket", s.Log, func(l *net.UnixListener) {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			running.Add(1)
			go func() {
				defer running.Done()
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					c.Close()
					return
				}
				defer func() { <-slots }()
				s.handle(ctx, c)
			}()
		}
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return func() {
		release()
		cancel()
		running.Wait()
		s.Conn.Close()
	}, nil
}

// handle runs one connection's command.
func (s *Server) handle(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(requestTimeout))
	kind, payload, err := cliwire.ReadFrameMax(c, cliwire.MaxRequest)
	if err != nil || kind != cliwire.KindRequest {
		s.logger().Warn("CLI socket: no request", "kind", string(kind), "err", err)
		return
	}
	req, err := cliwire.ParseRequest(payload)
	if err != nil {
		s.logger().Warn("CLI socket: bad request", "err", err)
		return
	}
	id, err := auth.Peer(c)
	if err != nil {
		s.logger().Warn("CLI socket: unknown caller", "err", err)
		return
	}
	if why := s.declines(req); why != "" {
		s.logger().Debug("CLI socket: left to phx-full", "user", id.User, "why", why)
		cliwire.WriteFrame(c, cliwire.KindFallback, []byte(why))
		return
	}
	tok, err := auth.Issue(s.Keys.Signing(), id, time.Now(), auth.LocalLifespan)
	if err != nil {
		s.logger().Warn("CLI socket: no credential issued", "err", err)
		return
	}
	c.SetDeadline(time.Time{})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess := newSession(c, cancel)
	go sess.read()
	stop := sess.keepAlive(cmp.Or(s.AliveInterval, cliwire.AliveInterval))
	code := Run(ctx, s.system(sess, req, id, tok), req.Args)
	stop()
	sess.send(cliwire.KindExit, cliwire.Uint32(uint32(code)))
}

// declines says why req is left to phx-full, or "" when s runs it: a
// command s does not run, global options before it, or settings that name
// another cluster or another credential than s's.
func (s *Server) declines(req *cliwire.Request) string {
	if req.Version != cliwire.Version {
		return fmt.Sprintf("protocol version %d, this server speaks %d", req.Version, cliwire.Version)
	}
	if cliwire.Command(req.Args) == "" {
		return "not a served command"
	}
	if !filepath.IsAbs(req.Dir) {
		return "working directory is not absolute"
	}
	env := envOf(req.Env)
	if env("PHX_TOKEN") != "" {
		return "PHX_TOKEN is set"
	}
	if v := env("PHX_INSECURE"); (v != "" && v != "0") != s.Insecure {
		return "PHX_INSECURE differs"
	}
	if ca := env("PHX_CA_CERT"); !s.Insecure && filepath.Clean(orDefault(ca, defaultCACert())) != filepath.Clean(orDefault(s.CACert, defaultCACert())) {
		return "PHX_CA_CERT names another CA"
	}
	conf, _ := os.ReadFile(s.configPath()) // the host's, which phx would read
	if !sameSet(ResolveAddrs("", env("PHX_SERVER"), conf), s.Conn.Addrs()) {
		return "another cluster's controllers"
	}
	return ""
}

func (s *Server) configPath() string { return orDefault(s.ConfigPath, DefaultConfigPath) }

func (s *Server) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// system is the System of a served command: the caller's arguments,
// environment, directory and identity; its files and stdin read by the
// caller; its output sent back; the server's connection with the caller's
// credential.
func (s *Server) system(sess *session, req *cliwire.Request, id auth.Identity, tok string) *System {
	return &System{
		Stdin:  sess.stdin(),
		Stdout: sess.writer(cliwire.KindStdout),
		Stderr: sess.writer(cliwire.KindStderr),
		Getenv: envOf(req.Env),
		Environ: func() []string {
			return slices.Clone(req.Env)
		},
		Now:         time.Now,
		Getwd:       func() (string, error) { return req.Dir, nil },
		CurrentUser: func() (*user.User, error) { return userOf(id), nil },
		LookupUser:  user.Lookup,
		ReadFile:    sess.readFile,
		Executable: func() (string, error) {
			return "", errors.New("not known to the CLI server")
		},
		Hostname:   os.Hostname,
		ConfigPath: s.configPath(),
		Location:   locationOf(req.Env, sess.readFile),
		Shared:     &Shared{Conn: s.Conn, Token: tok},
	}
}

// locationOf is the time zone a process with env has, by Go's rule (the
// caller's $TZ, not the daemon's): /etc/localtime when TZ is unset, UTC
// when it is empty or names no zone, else the zone it names. A TZ that is
// a file's path is read with readFile (by the caller, as every file the
// caller names).
func locationOf(env []string, readFile func(string) ([]byte, error)) *time.Location {
	tz, set := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TZ="); ok {
			tz, set = v, true
		}
	}
	if !set {
		if _, daemonSet := os.LookupEnv("TZ"); !daemonSet {
			return time.Local // /etc/localtime, as Go loaded it once for this process
		}
		if data, err := os.ReadFile("/etc/localtime"); err == nil {
			if loc, err := time.LoadLocationFromTZData("Local", data); err == nil {
				return loc
			}
		}
		return time.UTC
	}
	tz = strings.TrimPrefix(tz, ":")
	if tz == "" {
		return time.UTC
	}
	if strings.HasPrefix(tz, "/") {
		if data, err := readFile(tz); err == nil {
			if loc, err := time.LoadLocationFromTZData(tz, data); err == nil {
				return loc
			}
		}
		return time.UTC
	}
	if loc, err := time.LoadLocation(tz); err == nil {
		return loc
	}
	return time.UTC
}

// Shared is a connection a CLI server lends the commands it runs, with the
// credential of the user it runs one for.
type Shared struct {
	Conn  *apiclient.Conn
	Token string
}

// credentialed sends tok with every call on cc.
type credentialed struct {
	cc  grpc.ClientConnInterface
	tok string
}

func (c credentialed) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return c.cc.Invoke(auth.Outgoing(ctx, c.tok), method, args, reply, opts...)
}

func (c credentialed) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.cc.NewStream(auth.Outgoing(ctx, c.tok), desc, method, opts...)
}

// userOf is id's account on this host, or one made of its numbers when the
// host has none (as phx run by that uid would see it).
func userOf(id auth.Identity) *user.User {
	uid := strconv.FormatUint(uint64(id.UID), 10)
	if u, err := user.LookupId(uid); err == nil {
		return u
	}
	return &user.User{Uid: uid, Gid: strconv.FormatUint(uint64(id.GID), 10), Username: id.User}
}

// envOf looks a variable up in a KEY=VALUE list; the last one wins, as in
// a process's environment.
func envOf(env []string) func(string) string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// urfave/cli adds its two global flags, --help and --version, to every app
// and command it runs, and writes into them as it does (their defaults, in
// Apply). The CLI server runs many apps at once: each run applies a copy.
func init() {
	ucli.HelpFlag = &copiedBoolFlag{ucli.HelpFlag.(*ucli.BoolFlag)}
	ucli.VersionFlag = &copiedBoolFlag{ucli.VersionFlag.(*ucli.BoolFlag)}
}

// copiedBoolFlag is a BoolFlag that applies a copy of itself. Like the two
// global flags it wraps, it shows no default in help.
type copiedBoolFlag struct{ *ucli.BoolFlag }

func (f *copiedBoolFlag) Apply(set *flag.FlagSet) error {
	c := *f.BoolFlag
	return c.Apply(set)
}

func (f *copiedBoolFlag) GetDefaultText() string { return "" }
