package testcluster_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/controller"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// The security tests run the real phx as real Unix users (made with
// useradd -M), which get their credentials from the cluster's auth socket:
// the controller learns who they are from the kernel (SO_PEERCRED), never
// from what phx claims. They need root, to make users and to run
// processes as them; CI runs as root.

var phxBin struct {
	once sync.Once
	path string
	err  error
}

// buildPhx builds phx once for the test binary.
func buildPhx(t *testing.T) string {
	t.Helper()
	phxBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "phx-bin-")
		if err != nil {
			phxBin.err = err
			return
		}
		phxBin.path = filepath.Join(dir, "phx")
		// phx, and phx-full beside it, which phx becomes for what no CLI
		// server runs.
		for _, name := range []string{"phx", "phx-full"} {
			cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", filepath.Join(dir, name), "github.com/phalanx-hpc/phalanx/cmd/"+name)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				phxBin.err = errors.New("build " + name + ": " + err.Error() + "\n" + string(out))
				return
			}
		}
	})
	if phxBin.err != nil {
		t.Fatal(phxBin.err)
	}
	os.Chmod(filepath.Dir(phxBin.path), 0o755)
	return phxBin.path
}

// localUser returns the Unix user name, making it (without a home
// directory) if it does not exist.
func localUser(t *testing.T, name string) auth.Identity {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: makes Unix users and runs phx as them (CI runs as root)")
	}
	u, err := user.Lookup(name)
	if err != nil {
		if out, err := exec.Command("useradd", "-M", "-s", "/bin/sh", name).CombinedOutput(); err != nil && !strings.Contains(string(out), "already exists") {
			t.Fatalf("useradd %s: %v\n%s", name, err, out)
		}
		if u, err = user.Lookup(name); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return auth.Identity{User: name, UID: uint32(uid), GID: uint32(gid), Kind: auth.KindLocal}
}

// groupWith makes a group (if needed) with member in it, and returns its
// gid.
func groupWith(t *testing.T, group, member string) string {
	t.Helper()
	for _, args := range [][]string{{"groupadd", "-f", group}, {"usermod", "-aG", group, member}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	return g.Gid
}

// userDir is a directory id owns, for its scripts and outputs.
func userDir(t *testing.T, id auth.Identity) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id.User)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(id.UID), int(id.GID)); err != nil {
		t.Fatal(err)
	}
	// the test's temporary dirs are root's, mode 0700: let users through
	for d := filepath.Dir(dir); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	return dir
}

// sbatchAs submits with `phx sbatch --parsable args...` as id from dir and
// returns the job's ID, as printed and as a number; any failure ends t.
func sbatchAs(t *testing.T, c *testcluster.Cluster, id auth.Identity, dir string, args ...string) (string, uint64) {
	t.Helper()
	code, out, errOut := phxAs(t, c, id, dir, nil, append([]string{"sbatch", "--parsable"}, args...)...)
	if code != 0 {
		t.Fatalf("sbatch %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	jobID := strings.TrimSpace(out)
	n, err := strconv.ParseUint(jobID, 10, 64)
	if err != nil {
		t.Fatalf("sbatch %s printed %q, not a job ID", strings.Join(args, " "), out)
	}
	return jobID, n
}

// phxAs runs phx as id in dir against c and returns its exit code, stdout
// and stderr. env is added to its environment.
func phxAs(t *testing.T, c *testcluster.Cluster, id auth.Identity, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runPhxAs(t, buildPhx(t), c, id, dir, env, args...)
}

// frontOnly is a copy of phx with no phx-full beside it: it can run only
// what the cluster's CLI server runs.
func frontOnly(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "front")
	os.MkdirAll(dir, 0o755)
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	data, err := os.ReadFile(buildPhx(t))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "phx")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// runPhxAs is phxAs with the phx at bin.
func runPhxAs(t *testing.T, bin string, c *testcluster.Cluster, id auth.Identity, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + dir, "USER=" + id.User,
		"PHX_SERVER=" + strings.Join(c.APIAddrs(), ","), "PHX_AUTH_SOCKET=" + c.AuthSocket, "PHX_CA_CERT=" + c.CACert}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: id.UID, Gid: id.GID}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("phx %v as %s: %v", args, id.User, err)
	}
	return code, stdout.String(), stderr.String()
}

// The CLI server (cli.sock beside the auth socket) runs a user's command
// as that user: the job is theirs, and the files are read by their phx,
// never by the server (which runs as root). A phx with no phx-full beside
// it shows which commands the server ran.
func TestCLIServerActsAsCaller(t *testing.T) {
	alice, bob := localUser(t, "phxalice"), localUser(t, "phxbob")
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "process"})
	aliceDir, bobDir := userDir(t, alice), userDir(t, bob)
	front := frontOnly(t)

	code, out, errOut := runPhxAs(t, front, c, alice, aliceDir, nil, "sbatch", "--parsable", "-o", "id-%j.out", "--wrap", "id -un")
	if code != 0 {
		t.Fatalf("alice's served sbatch: exit %d: %s", code, errOut)
	}
	id, _ := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	c.WaitJob(id, 20*time.Second, "COMPLETED")
	outPath := filepath.Join(aliceDir, "id-"+strconv.FormatUint(id, 10)+".out")
	if data, err := os.ReadFile(outPath); err != nil || strings.TrimSpace(string(data)) != "phxalice" {
		t.Errorf("alice's served job printed %q (%v), want phxalice", data, err)
	}
	if fi, err := os.Stat(outPath); err != nil || fi.Sys().(*syscall.Stat_t).Uid != alice.UID {
		t.Errorf("the served job's output is not alice's: %v", err)
	}

	private := filepath.Join(aliceDir, "private.sh")
	if err := os.WriteFile(private, []byte("#!/bin/sh\necho secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chown(private, int(alice.UID), int(alice.GID))
	code, _, errOut = runPhxAs(t, front, c, bob, bobDir, nil, "sbatch", private)
	if code == 0 || !strings.Contains(errOut, "permission denied") {
		t.Errorf("bob's served sbatch of alice's 0600 script: exit %d, stderr %q; want permission denied", code, errOut)
	}
	if code, out, errOut := runPhxAs(t, front, c, bob, bobDir, nil, "squeue", "-h", "-t", "all", "-o", "%i %u"); code != 0 || !strings.Contains(out, "phxalice") {
		t.Errorf("bob's served squeue: exit %d, %q %q", code, out, errOut)
	}
	// Without the server, this phx has nothing to run them with.
	code, _, errOut = runPhxAs(t, front, c, alice, aliceDir, []string{"PHX_CLI_SOCKET=none"}, "squeue")
	if code == 0 || !strings.Contains(errOut, "phx-full is not installed") {
		t.Errorf("PHX_CLI_SOCKET=none without phx-full: exit %d, stderr %q", code, errOut)
	}
	// phx-full, with the server turned off, submits as alice too.
	code, out, errOut = phxAs(t, c, alice, aliceDir, []string{"PHX_CLI_SOCKET=none"}, "sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true")
	if code != 0 {
		t.Fatalf("alice's sbatch in phx-full: exit %d: %s", code, errOut)
	}
	id, _ = strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	if j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id}); err != nil || j.GetSpec().GetUser() != "phxalice" {
		t.Errorf("phx-full's job: user %q, %v", j.GetSpec().GetUser(), err)
	}
}

// Jobs run as the user the kernel named to the auth socket; another user
// can neither cancel them, nor read their scripts, nor change the cluster.
func TestUsersActOnlyAsThemselves(t *testing.T) {
	alice, bob := localUser(t, "phxalice"), localUser(t, "phxbob")
	team := groupWith(t, "phxteam", "phxalice")
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "process"})
	aliceDir, bobDir := userDir(t, alice), userDir(t, bob)

	code, out, errOut := phxAs(t, c, alice, aliceDir, nil, "sbatch", "--parsable", "-o", "id-%j.out", "--wrap", "id -u; id -g; id -un; id -G")
	if code != 0 {
		t.Fatalf("alice's sbatch: exit %d: %s", code, errOut)
	}
	idJob, _ := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	c.WaitJob(idJob, 20*time.Second, "COMPLETED")
	outPath := filepath.Join(aliceDir, "id-"+strconv.FormatUint(idJob, 10)+".out")
	data, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := []string{strconv.Itoa(int(alice.UID)), strconv.Itoa(int(alice.GID)), "phxalice"}
	if len(lines) != 4 || !slices.Equal(lines[:3], want) {
		t.Fatalf("alice's job printed %q, want %q and her groups: it must run as alice", data, want)
	}
	if groups := strings.Fields(lines[3]); !slices.Contains(groups, team) || slices.Contains(groups, "0") {
		t.Errorf("alice's job has groups %v: want hers (%s among them), and not root's", groups, team)
	}
	if fi, err := os.Stat(outPath); err != nil || fi.Sys().(*syscall.Stat_t).Uid != alice.UID {
		t.Errorf("alice's output is not alice's: %v", err)
	}

	// A job of alice's that runs long enough to be cancelled.
	code, out, errOut = phxAs(t, c, alice, aliceDir, nil, "sbatch", "--parsable", "-o", "/dev/null", "--wrap", "sleep 300")
	if code != 0 {
		t.Fatalf("alice's second sbatch: exit %d: %s", code, errOut)
	}
	long := strings.TrimSpace(out)
	longID, _ := strconv.ParseUint(long, 10, 64)
	c.WaitJob(longID, 20*time.Second, "RUNNING")

	for _, args := range [][]string{{"scancel", long}, {"scancel", "-u", "phxalice"}} {
		code, _, errOut := phxAs(t, c, bob, bobDir, nil, args...)
		if code == 0 || !strings.Contains(errOut, "permission denied") {
			t.Errorf("bob's %v: exit %d, stderr %q; want permission denied", args, code, errOut)
		}
	}
	if j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: longID}); err != nil || j.State != "RUNNING" {
		t.Fatalf("alice's job after bob's scancel: %v %v", j.GetState(), err)
	}
	// bob's scancel --name with no user acts on his own jobs only.
	if code, _, errOut := phxAs(t, c, bob, bobDir, nil, "scancel", "--name", "wrap"); code != 0 {
		t.Errorf("bob's scancel --name: exit %d, %s", code, errOut)
	}
	if j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: longID}); err != nil || j.State != "RUNNING" {
		t.Fatalf("alice's job after bob's scancel --name wrap: %v %v", j.GetState(), err)
	}

	// Scripts are private to their owner.
	asBob, asAlice := c.ClientAs(bob), c.ClientAs(alice)
	if j, err := asBob.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: longID}); err != nil || j.GetSpec().GetScript() != "" || len(j.GetSpec().GetEnvironment()) != 0 {
		t.Errorf("bob reads alice's job: script %q, %d variables, %v; want neither", j.GetSpec().GetScript(), len(j.GetSpec().GetEnvironment()), err)
	}
	if j, err := asAlice.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: longID}); err != nil || !strings.Contains(j.GetSpec().GetScript(), "sleep 300") {
		t.Errorf("alice reads her job: script %q, %v", j.GetSpec().GetScript(), err)
	}

	// The cluster is the administrators'.
	for _, args := range [][]string{{"scontrol", "raft", "remove", "ctl0"}, {"scontrol", "backup", filepath.Join(bobDir, "b.db")}, {"scontrol", "token", "username=phxalice"}} {
		if code, _, errOut := phxAs(t, c, bob, bobDir, nil, args...); code == 0 || !strings.Contains(errOut, "permission denied") {
			t.Errorf("bob's %v: exit %d, stderr %q; want permission denied", args, code, errOut)
		}
	}
	if code, _, errOut := phxAs(t, c, bob, bobDir, nil, "sbatch", "--priority", "1000000", "--wrap", "true"); code == 0 || !strings.Contains(errOut, "--priority is for operators") {
		t.Errorf("bob's sbatch --priority: exit %d, stderr %q", code, errOut)
	}

	// A request that claims another uid is refused, whatever phx says.
	for _, uid := range []int32{0, int32(alice.UID)} {
		s := spec(bobDir, "claim", 1, 0, "#!/bin/sh\nid\n")
		s.Uid, s.Gid, s.User = uid, 0, "root"
		_, err := asBob.SubmitJob(context.Background(), &phalanxv1.SubmitJobRequest{Spec: s})
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("bob's submit claiming uid %d: %v; want PermissionDenied", uid, err)
		}
	}

	// A token from phx scontrol token (root may sign one for bob) makes
	// phx act as bob whoever runs it; an expired one is refused, never
	// swapped for the socket's credential.
	root := auth.Identity{User: "root"}
	code, out, errOut = phxAs(t, c, root, bobDir, nil, "scontrol", "token", "username=phxbob", "lifespan=600")
	tok, ok := strings.CutPrefix(strings.TrimSpace(out), "PHX_TOKEN=")
	if code != 0 || !ok {
		t.Fatalf("root's scontrol token: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = phxAs(t, c, root, bobDir, []string{"PHX_TOKEN=" + tok}, "sbatch", "--parsable", "-o", "tok-%j.out", "--wrap", "id -un")
	if code != 0 {
		t.Fatalf("sbatch with bob's token: exit %d: %s", code, errOut)
	}
	tokJob, _ := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	c.WaitJob(tokJob, 20*time.Second, "COMPLETED")
	if data, err := os.ReadFile(filepath.Join(bobDir, "tok-"+strconv.FormatUint(tokJob, 10)+".out")); err != nil || string(data) != "phxbob\n" {
		t.Errorf("the job submitted with bob's token ran as %q (%v), want phxbob", data, err)
	}
	old, err := auth.Issue(c.Key, bob, time.Now().Add(-2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := phxAs(t, c, bob, bobDir, []string{"PHX_TOKEN=" + old}, "squeue"); code == 0 || !strings.Contains(errOut, "credential expired") {
		t.Errorf("squeue with an expired token: exit %d, stderr %q; want it refused as expired", code, errOut)
	}

	// alice cancels her own job.
	if code, _, errOut := phxAs(t, c, alice, aliceDir, nil, "scancel", long); code != 0 {
		t.Fatalf("alice's scancel: exit %d: %s", code, errOut)
	}
	c.WaitJob(longID, 20*time.Second, "CANCELLED")
}

// Calls without a credential, with one signed by another key, or with an
// expired one are refused, and never fall back to another identity.
func TestCredentialsAreChecked(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake"})
	alice := auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal}
	other, err := auth.WriteNewKey(filepath.Join(t.TempDir(), "other.key"))
	if err != nil {
		t.Fatal(err)
	}
	expired, err := auth.Issue(c.Key, alice, time.Now().Add(-time.Hour), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		dial []apiclient.Option
		want string
	}{
		"no credential": {noCredential(&c.Secrets), "no credential"},
		"another key":   {credential(t, &c.Secrets, other, alice, time.Minute), "not signed with this cluster's key"},
		"expired":       {staticCredential(&c.Secrets, expired), "credential expired"},
	}
	for name, tc := range cases {
		conn, err := apiclient.Dial(c.APIAddrs(), tc.dial...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = phalanxv1.NewControllerServiceClient(conn).ListJobs(ctx, &phalanxv1.ListJobsRequest{})
		cancel()
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want Unauthenticated saying %q", name, err, tc.want)
		}
	}
}

// With DisableRootJobs, root's jobs are refused; its other calls are not.
func TestDisableRootJobs(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake", DisableRootJobs: true})
	s := spec(t.TempDir(), "root", 1, 0, "#!/bin/sh\ntrue\n")
	s.Uid, s.Gid, s.User = 0, 0, "root"
	_, err := c.Client.SubmitJob(context.Background(), &phalanxv1.SubmitJobRequest{Spec: s})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "DisableRootJobs") {
		t.Fatalf("root's submit: %v; want PermissionDenied naming DisableRootJobs", err)
	}
	s.Uid, s.Gid = -1, -1 // as the agent's own user: root too
	if _, err := c.Client.SubmitJob(context.Background(), &phalanxv1.SubmitJobRequest{Spec: s}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a submit as the agent's own user: %v; want PermissionDenied", err)
	}
	if _, err := c.Client.ListJobs(context.Background(), &phalanxv1.ListJobsRequest{}); err != nil {
		t.Fatalf("root's squeue: %v", err)
	}
}

// The node API takes a node's calls only from the agent holding that
// node's certificate: no credential, a user's, root's or a node's
// credential signed with the cluster key (which root on any node holds),
// another node's certificate, or one from another CA, revoked or expired,
// gets nowhere, and a node's certificate is no use on the user API.
func TestNodeAPIOnlyForItsNode(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, Runtime: "fake"})
	alice := auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal}
	node := c.Nodes[0]
	withCert := func(m *pki.Material) []apiclient.Option {
		return []apiclient.Option{apiclient.WithDialOptions(c.Transport(m))}
	}
	otherCA := testcluster.NewSecrets(t, t.TempDir())
	revoked := c.Material(t, pki.KindNode, node)
	c.Revoke(t, revoked.Serial())
	c.ReloadTLS() // every replica reads the new revocation list, as on SIGHUP
	callers := map[string]struct {
		dial []apiclient.Option
		code codes.Code // handshake: Unavailable, or DeadlineExceeded after retrying
		want string
	}{
		"no credential":              {noCredential(&c.Secrets), codes.Unauthenticated, "only with a node's certificate"},
		"a user":                     {credential(t, &c.Secrets, c.Key, alice, time.Minute), codes.Unauthenticated, "only with a node's certificate"},
		"root":                       {credential(t, &c.Secrets, c.Key, testcluster.Root, time.Minute), codes.Unauthenticated, "only with a node's certificate"},
		"a node credential, key":     {credential(t, &c.Secrets, c.Key, auth.NodeIdentity(node), time.Minute), codes.Unauthenticated, "only with a node's certificate"},
		"another node's certificate": {withCert(c.Material(t, pki.KindNode, c.Nodes[1])), codes.PermissionDenied, "only node " + node},
		// Refused at the handshake: the client sees the connection fail
		// (the controller logs why).
		"a revoked certificate":    {withCert(revoked), codes.Unavailable, ""},
		"another CA's certificate": {withCert(otherCA.Material(t, pki.KindNode, node)), codes.Unavailable, ""},
		"an expired certificate":   {expiredCertificate(t, &c.Secrets, node), codes.Unavailable, ""},
	}
	for who, tc := range callers {
		conn, err := apiclient.Dial(c.APIAddrs(), tc.dial...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		api := phalanxv1.NewNodeServiceClient(conn)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		calls := map[string]error{}
		_, calls["register"] = api.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: node, Addr: "10.6.6.6", Gpus: 8})
		_, calls["heartbeat"] = api.Heartbeat(ctx, &phalanxv1.HeartbeatRequest{Name: node})
		_, calls["report"] = api.ReportTaskStatus(ctx, &phalanxv1.ReportTaskStatusRequest{Node: node, JobId: 1, State: "EXITED"})
		if stream, err := api.WatchAssignments(ctx, &phalanxv1.WatchAssignmentsRequest{Name: node}); err != nil {
			calls["watch"] = err
		} else {
			_, calls["watch"] = stream.Recv()
		}
		for call, err := range calls {
			code := status.Code(err)
			if tc.code == codes.Unavailable && code == codes.DeadlineExceeded {
				code = codes.Unavailable
			}
			if err == nil || code != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s's %s for %s: %v; want %v saying %q", who, call, node, err, tc.code, tc.want)
			}
		}
	}
	// The node's own agent still runs it, and the user API refuses a
	// node's certificate without a user's credential.
	c.WaitNodes(2)
	conn, err := apiclient.Dial(c.APIAddrs(), withCert(c.Material(t, pki.KindNode, node))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := phalanxv1.NewControllerServiceClient(conn).ListJobs(context.Background(), &phalanxv1.ListJobsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a node's certificate on the user API: %v; want Unauthenticated", err)
	}
	// Except a replica's status: its agent asks which replica leads.
	if st, err := phalanxv1.NewControllerServiceClient(conn).GetControllerStatus(context.Background(), &phalanxv1.GetControllerStatusRequest{}); err != nil || st.Role == "" {
		t.Errorf("a node's certificate asking a replica's status: %v, %v; want its status", st, err)
	}
}

// expiredCertificate dials with a node certificate for name, from the
// cluster's CA, that expired an hour ago (a client that does not check its
// own certificate, as a rogue one would not).
func expiredCertificate(t *testing.T, s *testcluster.Secrets, name string) []apiclient.Option {
	t.Helper()
	dir := t.TempDir()
	if _, err := s.CA.IssueInto(dir, pki.KindNode, name, nil, time.Hour, time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, pki.KindNode.CertFile()), filepath.Join(dir, pki.KindNode.KeyFile()))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, Certificates: []tls.Certificate{pair}}
	return []apiclient.Option{apiclient.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(cfg)))}
}

// testKeyOf is a cluster key of no cluster.
func testKeyOf(t *testing.T) auth.Key {
	t.Helper()
	k, err := auth.WriteNewKey(filepath.Join(t.TempDir(), "other.key"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// With PrivateData=jobs, users see only their own jobs; operators and
// administrators see every job.
func TestPrivateDataJobs(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake", PrivateJobs: true, OperatorUsers: []string{"carol"}})
	alice := auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal}
	bob := auth.Identity{User: "bob", UID: 1001, GID: 100, Kind: auth.KindLocal}
	carol := auth.Identity{User: "carol", UID: 1002, GID: 100, Kind: auth.KindLocal}
	ctx := context.Background()
	s := spec(runtimetest.SharedDir(t), "mine", 1, 0, "#!/bin/sh\nsleep 60\n") // its output is opened as alice
	s.Uid, s.Gid, s.User = int32(alice.UID), int32(alice.GID), alice.User
	resp, err := c.ClientAs(alice).SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		who  auth.Identity
		sees bool
	}{{alice, true}, {bob, false}, {carol, true}, {testcluster.Root, true}} {
		api := c.ClientAs(tc.who)
		list, err := api.ListJobs(ctx, &phalanxv1.ListJobsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(list.Jobs) == 1; got != tc.sees {
			t.Errorf("%s lists %d jobs; sees alice's: want %v", tc.who, len(list.Jobs), tc.sees)
		}
		_, err = api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: resp.JobId})
		if want := map[bool]codes.Code{true: codes.OK, false: codes.PermissionDenied}[tc.sees]; status.Code(err) != want {
			t.Errorf("%s reads alice's job: %v; want %v", tc.who, err, want)
		}
	}
	// A refused change does not name the owner a listing hides.
	_, err = c.ClientAs(bob).CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{resp.JobId}})
	if status.Code(err) != codes.PermissionDenied || strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), "1000") {
		t.Errorf("bob cancels alice's hidden job: %v; want PermissionDenied without her name or uid", err)
	}
}

// A user's calls are rate limited (Slurm's rl_*): a burst past the bucket
// is refused with the wait, and refills; administrators are not limited.
func TestUserCallsAreRateLimited(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake",
		RateLimit: controller.RateLimit{Bucket: 3, Refill: 3, Period: time.Second, Table: 100}})
	alice := c.ClientAs(auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal})
	ctx := context.Background()
	var refused error
	for i := 0; i < 10 && refused == nil; i++ {
		_, refused = alice.ListJobs(ctx, &phalanxv1.ListJobsRequest{})
	}
	if status.Code(refused) != codes.ResourceExhausted || !strings.Contains(refused.Error(), "slow down") {
		t.Fatalf("alice's burst of 10 calls against a bucket of 3: %v; want ResourceExhausted", refused)
	}
	for i := 0; i < 10; i++ {
		if _, err := c.Client.ListJobs(ctx, &phalanxv1.ListJobsRequest{}); err != nil {
			t.Fatalf("root's call %d: %v; administrators are not limited", i+1, err)
		}
	}
	c.Eventually(5*time.Second, func() error {
		_, err := alice.ListJobs(ctx, &phalanxv1.ListJobsRequest{})
		return err
	})
	// A listing counts once, at its first page: the pages that follow are
	// free, so a long squeue is not cut short.
	for i := 0; i < 10; i++ {
		if _, err := alice.ListJobs(ctx, &phalanxv1.ListJobsRequest{PageToken: "1"}); err != nil {
			t.Fatalf("alice's page %d of a listing: %v", i+2, err)
		}
	}
}

// The cluster key changes without a restart: replicas take auth.key.new
// on SIGHUP, then sign with it once it is renamed auth.key, still taking
// the old key's credentials from hosts not switched yet (auth.key.old).
func TestKeyChangesWithoutRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs phalanx-controller processes; not in -short")
	}
	procs := testcluster.StartProcs(t, testcluster.BuildController(t, t.TempDir()), testcluster.ProcOptions{Replicas: 1})
	alice := auth.Identity{User: "alice", UID: 1000, GID: 100, Kind: auth.KindLocal}
	list := func(k auth.Key) error {
		conn, err := apiclient.Dial(procs.APIAddrs(), credential(t, &procs.Secrets, k, alice, time.Minute)...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = phalanxv1.NewControllerServiceClient(conn).ListJobs(ctx, &phalanxv1.ListJobsRequest{})
		return err
	}
	next, err := auth.WriteNewKey(procs.KeyFile + ".new")
	if err != nil {
		t.Fatal(err)
	}
	if err := list(next); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("the next key before SIGHUP: %v; want Unauthenticated", err)
	}
	procs.Hangup(0)
	testcluster.Eventually(t, 10*time.Second, func() error { return list(next) })
	if err := list(procs.Key); err != nil {
		t.Fatalf("the current key after the next one came: %v", err)
	}
	// Switch: the old key goes to auth.key.old, then is retired.
	if err := os.Rename(procs.KeyFile, procs.KeyFile+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(procs.KeyFile+".new", procs.KeyFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(procs.KeyFile + ".old"); err != nil {
		t.Fatal(err)
	}
	procs.Hangup(0)
	testcluster.Eventually(t, 10*time.Second, func() error {
		if err := list(procs.Key); status.Code(err) != codes.Unauthenticated {
			return fmt.Errorf("the retired key: %v; want Unauthenticated", err)
		}
		return nil
	})
	if err := list(next); err != nil {
		t.Fatalf("the new key after the switch: %v", err)
	}
}

var agentBin struct {
	once sync.Once
	path string
	err  error
}

// buildAgent builds phalanx-agent once for the test binary (with cgo, for
// NVML, as `make build` does), and phalanx-shim beside it, which the agent
// runs as its tasks' supervisor.
func buildAgent(t *testing.T) string {
	t.Helper()
	agentBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "phx-agent-bin-")
		if err != nil {
			agentBin.err = err
			return
		}
		agentBin.path = filepath.Join(dir, "phalanx-agent")
		cmd := exec.Command("go", "build", "-tags", "no_dynamic_plugins", "-o", agentBin.path, "github.com/phalanx-hpc/phalanx/cmd/phalanx-agent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentBin.err = errors.New("build phalanx-agent: " + err.Error() + "\n" + string(out))
			return
		}
		cmd = exec.Command("go", "build", "-o", filepath.Join(dir, "phalanx-shim"), "github.com/phalanx-hpc/phalanx/cmd/phalanx-shim")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentBin.err = errors.New("build phalanx-shim: " + err.Error() + "\n" + string(out))
		}
	})
	if agentBin.err != nil {
		t.Fatal(agentBin.err)
	}
	return agentBin.path
}

// A login node's `phalanx-agent authd --controller`: the auth socket, and
// the CLI server beside it, which runs a user's phx sbatch as that user.
func TestAuthdServesPhx(t *testing.T) {
	alice := localUser(t, "phxalice")
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "process"})
	aliceDir := userDir(t, alice)
	agent := buildAgent(t)
	front := frontOnly(t)
	run := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(run, 0o755)
	for d := run; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	logPath := filepath.Join(t.TempDir(), "authd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	log := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	authd := exec.Command(agent, "authd", "--auth-key", c.KeyFile, "--auth-socket", filepath.Join(run, "auth.sock"),
		"--controller", strings.Join(c.APIAddrs(), ","), "--tls-dir", filepath.Dir(c.CACert))
	authd.Stdout, authd.Stderr = logFile, logFile
	if err := authd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { authd.Process.Kill(); authd.Wait() })
	cliSock := filepath.Join(run, "cli.sock")
	for i := 0; ; i++ {
		if _, err := os.Stat(cliSock); err == nil {
			break
		}
		if i == 100 {
			t.Fatalf("authd --controller serves no %s after 10 s:\n%s", cliSock, log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, out, errOut := runPhxAs(t, front, c, alice, aliceDir, []string{"PHX_AUTH_SOCKET=" + filepath.Join(run, "auth.sock")},
		"sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true")
	if code != 0 {
		t.Fatalf("alice's sbatch through authd: exit %d: %s\nauthd:\n%s", code, errOut, log())
	}
	id, _ := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	if j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id}); err != nil || j.GetSpec().GetUser() != "phxalice" {
		t.Errorf("the job submitted through authd: user %q, %v", j.GetSpec().GetUser(), err)
	}
}
