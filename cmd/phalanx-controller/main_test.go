package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/controller"
	"github.com/phalanx-hpc/phalanx/internal/flagtest"
	"github.com/phalanx-hpc/phalanx/pki"
)

// placement is the part of controller.Config that placeReplica decides.
type placement struct {
	NodeID, APIAddr, APIAdvertise, RaftAddr, RaftAdvertise string
	Bootstrap                                              bool
	Peers, PeerAPIs                                        []string
}

const threeControllers = `ControllerHost=ctl1(127.0.0.21)
SlurmctldHost=ctl2(127.0.0.22)
ControllerHost=ctl3(ctl3.example:7900)
ControllerPort=7000
RaftPort=7001
`

// TestPlaceReplica: a replica takes its identity, addresses and the voters
// of a new cluster from the ControllerHost lines; flags override them; a
// replica the lines do not name is refused.
func TestPlaceReplica(t *testing.T) {
	threePeers := []string{"ctl1=127.0.0.21:7001", "ctl2=127.0.0.22:7001", "ctl3=ctl3.example:7001"}
	for _, tc := range []struct {
		name, conf string
		args       []string
		want       placement
		err        string
	}{{
		name: "from the lines", conf: threeControllers, args: []string{"--node-id", "ctl2"},
		want: placement{NodeID: "ctl2", APIAddr: ":7000", APIAdvertise: "127.0.0.22:7000", RaftAddr: "127.0.0.22:7001",
			Bootstrap: true, Peers: threePeers, PeerAPIs: []string{"127.0.0.21:7000", "ctl3.example:7900"}},
	}, {
		name: "an address with its own API port", conf: threeControllers, args: []string{"--node-id", "ctl3"},
		want: placement{NodeID: "ctl3", APIAddr: ":7000", APIAdvertise: "ctl3.example:7900", RaftAddr: "ctl3.example:7001",
			Bootstrap: true, Peers: threePeers, PeerAPIs: []string{"127.0.0.21:7000", "127.0.0.22:7000"}},
	}, {
		name: "flags override the lines", conf: threeControllers,
		args: []string{"--node-id", "ctl1", "--listen", "127.0.0.21:7000", "--raft-addr", "0.0.0.0:7001",
			"--raft-advertise", "127.0.0.21:7001", "--api-advertise", "ctl1.example:7000", "--bootstrap=false"},
		want: placement{NodeID: "ctl1", APIAddr: "127.0.0.21:7000", APIAdvertise: "ctl1.example:7000", RaftAddr: "0.0.0.0:7001",
			RaftAdvertise: "127.0.0.21:7001", Peers: threePeers, PeerAPIs: []string{"127.0.0.22:7000", "ctl3.example:7900"}},
	}, {
		name: "--peers replaces the lines", conf: threeControllers,
		args: []string{"--node-id", "x", "--bootstrap", "--peers", "x=10.0.0.1:7001,y=10.0.0.2:7001", "--peer-apis", "10.0.0.2:7000"},
		want: placement{NodeID: "x", APIAddr: ":7000", RaftAddr: "127.0.0.1:7001", Bootstrap: true,
			Peers: []string{"x=10.0.0.1:7001", "y=10.0.0.2:7001"}, PeerAPIs: []string{"10.0.0.2:7000"}},
	}, {
		name: "no lines: flags only", conf: "",
		args: []string{"--bootstrap", "--raft-addr", "10.0.0.1:7819"},
		want: placement{APIAddr: ":7817", RaftAddr: "10.0.0.1:7819", Bootstrap: true},
	}, {
		name: "not listed", conf: threeControllers, args: []string{"--node-id", "ctl9"},
		err: "--node-id ctl9 is not among the ControllerHost lines of the config (ctl1, ctl2, ctl3): add a ControllerHost=ctl9(ADDR) line to every replica's config, or give the name of one of them",
	}, {
		// It used to start and bootstrap the listed replicas plus itself:
		// a configuration the listed replicas never agreed to.
		name: "not listed, with its own Raft address", conf: threeControllers,
		args: []string{"--node-id", "ctl9", "--raft-addr", "127.0.0.29:7001"},
		err:  "--node-id ctl9 is not among the ControllerHost lines",
	}, {
		name: "two lines, one Raft address", conf: "ControllerHost=ctl1(10.0.0.1)\nControllerHost=ctl2(10.0.0.1:7827)\n",
		args: []string{"--node-id", "ctl1"},
		err:  "ControllerHost lines ctl1 and ctl2 share the Raft address 10.0.0.1:7819 (RaftPort is the same for every controller): give each its own address",
	}, {
		name: "--peer-apis alone", conf: threeControllers, args: []string{"--node-id", "ctl1", "--peer-apis", "a:1"},
		err: "--peer-apis goes with --peers",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := placeFrom(t, tc.conf, tc.args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q is not one line", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("placement\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// placeFrom runs configure on a config file holding conf and the flags.
func placeFrom(t *testing.T, conf string, args ...string) (placement, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "phalanx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "auth.key")
	if _, err := auth.WriteNewKey(key); err != nil {
		t.Fatal(err)
	}
	f, err := parseFlags(append([]string{"--config", path, "--data-dir", t.TempDir(), "--auth-key", key, "--tls-dir", tlsDir(t, pki.KindController, "ctl1")}, args...))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configure(f, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return placement{cfg.NodeID, cfg.APIAddr, cfg.APIAdvertise, cfg.RaftAddr, cfg.RaftAdvertise,
		cfg.Bootstrap, cfg.Peers, cfg.PeerAPIs}, err
}

// The controller needs the cluster key, says how to make one when it is
// missing, and runs without only when told --insecure.
func TestAuthKeyRequired(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.key")
	f, err := parseFlags([]string{"--config", os.DevNull, "--data-dir", dir, "--auth-key", missing, "--tls-dir", tlsDir(t, pki.KindController, "ctl1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := configure(f, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), "phalanx-controller keygen") {
		t.Fatalf("no key: %v; want advice to run keygen", err)
	}
	if code := run([]string{"keygen", missing}); code != 0 {
		t.Fatalf("keygen exit %d", code)
	}
	if fi, err := os.Stat(missing); err != nil || fi.Mode().Perm() != 0o400 {
		t.Fatalf("keygen wrote %v, %v; want mode 0400", fi.Mode(), err)
	}
	if code := run([]string{"keygen", missing}); code == 0 {
		t.Fatal("keygen replaced an existing key")
	}
	cfg, err := configure(f, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || cfg.AuthKeys == nil || len(cfg.AuthKeys.Signing()) < auth.MinKeySize || cfg.Insecure {
		t.Fatalf("with the key: %v, insecure %v, %v", cfg.AuthKeys, cfg.Insecure, err)
	}
	f, err = parseFlags([]string{"--config", os.DevNull, "--data-dir", dir, "--auth-key", filepath.Join(dir, "other"), "--insecure"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := configure(f, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil || !cfg.Insecure {
		t.Fatalf("--insecure: insecure %v, %v", cfg.Insecure, err)
	}
}

// DisableRootJobs, AdminUsers and OperatorUsers come from the config;
// the flags replace the lists.
func TestAccessFromConfig(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "phalanx.conf")
	if err := os.WriteFile(conf, []byte("DisableRootJobs=YES\nAdminUsers=alice,bob\nOperatorUsers=carol\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "auth.key")
	if _, err := auth.WriteNewKey(key); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args          []string
		admins, opers string
	}{
		{nil, "alice,bob", "carol"},
		{[]string{"--admin-users", "dave", "--operator-users", ""}, "dave", ""},
	} {
		f, err := parseFlags(append([]string{"--config", conf, "--data-dir", dir, "--auth-key", key, "--tls-dir", tlsDir(t, pki.KindController, "ctl1")}, tc.args...))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := configure(f, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if !cfg.DisableRootJobs || strings.Join(cfg.AdminUsers, ",") != tc.admins || strings.Join(cfg.OperatorUsers, ",") != tc.opers {
			t.Errorf("%v: DisableRootJobs %v, admins %v, operators %v; want true, %s, %s", tc.args, cfg.DisableRootJobs, cfg.AdminUsers, cfg.OperatorUsers, tc.admins, tc.opers)
		}
	}
}

// The controllers' kill grace, which the agents apply at a cancel and at
// a job's time limit, is Slurm's KillWait from the config unless
// --kill-grace is given; neither: the controller's default (zero here).
func TestKillWaitFromConfig(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "auth.key")
	if _, err := auth.WriteNewKey(key); err != nil {
		t.Fatal(err)
	}
	tls := tlsDir(t, pki.KindController, "ctl1")
	for _, tc := range []struct {
		conf string
		args []string
		want time.Duration
	}{
		{"KillWait=120\n", nil, 120 * time.Second},
		{"KillWait=120\n", []string{"--kill-grace", "5s"}, 5 * time.Second},
		{"ClusterName=c\n", nil, 0},
	} {
		conf := filepath.Join(t.TempDir(), "phalanx.conf")
		if err := os.WriteFile(conf, []byte(tc.conf), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := parseFlags(append([]string{"--config", conf, "--data-dir", dir, "--auth-key", key, "--tls-dir", tls}, tc.args...))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := configure(f, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.KillGrace != tc.want {
			t.Errorf("%q %v: KillGrace %s; want %s", tc.conf, tc.args, cfg.KillGrace, tc.want)
		}
	}
}

// tlsDir makes a CA and a certificate of kind for name with the ca
// command, in a TLS directory as a daemon's --tls-dir, and returns it.
func tlsDir(t *testing.T, kind pki.Kind, name string) string {
	t.Helper()
	caDir, out := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := caCommand([]string{"init", "--dir", caDir}, &stdout, &stderr); code != 0 {
		t.Fatalf("ca init: exit %d: %s", code, stderr.String())
	}
	if code := caCommand([]string{"issue", kind.String(), name, "--dir", caDir, "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("ca issue: exit %d: %s", code, stderr.String())
	}
	return out
}

// The controller needs its TLS files, says how to make them when they are
// missing and how to fix them when they are wrong, refuses another kind's
// certificate, and runs without only when told --insecure.
func TestTLSRequired(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "auth.key")
	if _, err := auth.WriteNewKey(key); err != nil {
		t.Fatal(err)
	}
	// A node's certificate and key, put where the controller's go.
	misplaced := tlsDir(t, pki.KindNode, "gpu001")
	for _, kf := range [][2]string{{"node.crt", "controller.crt"}, {"node.key", "controller.key"}} {
		if err := os.Rename(filepath.Join(misplaced, kf[0]), filepath.Join(misplaced, kf[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		tlsDir string
		want   string
	}{
		{filepath.Join(dir, "none"), "phalanx-controller ca init"},
		{misplaced, "holds a node's certificate (gpu001)"},
	} {
		f, err := parseFlags([]string{"--config", os.DevNull, "--data-dir", dir, "--auth-key", key, "--tls-dir", tc.tlsDir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := configure(f, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--tls-dir %s: %v; want an error saying %q", tc.tlsDir, err, tc.want)
		}
	}
	// Files that are there but wrong get what fixes them, not how to make
	// a CA: ca init would refuse the CA's directory anyway.
	readable := tlsDir(t, pki.KindController, "ctl1")
	if err := os.Chmod(filepath.Join(readable, "controller.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := parseFlags([]string{"--config", os.DevNull, "--data-dir", dir, "--auth-key", key, "--tls-dir", readable})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := configure(f, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), "chmod 0400") || strings.Contains(err.Error(), "ca init") {
		t.Errorf("a key others may read: %v; want the chmod that fixes it, and no ca init", err)
	}
	f, err = parseFlags([]string{"--config", os.DevNull, "--data-dir", dir, "--auth-key", key, "--tls-dir", tlsDir(t, pki.KindController, "ctl1")})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configure(f, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || cfg.TLS == nil || cfg.TLS.Self().Name != "ctl1" {
		t.Fatalf("with a controller's certificate: %v", err)
	}
	f, err = parseFlags([]string{"--config", os.DevNull, "--data-dir", dir, "--auth-key", key, "--tls-dir", filepath.Join(dir, "none"), "--insecure"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := configure(f, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil || cfg.TLS != nil {
		t.Fatalf("--insecure: TLS %v, %v", cfg.TLS, err)
	}
}

// ca init, issue and revoke, as an admin runs them, and what they refuse.
func TestCACommand(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := caCommand(append(args, "--dir", dir), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	if code, stdout, stderr := run("init"); code != 0 || !strings.Contains(stdout, "ca.key  keep here only") {
		t.Fatalf("ca init: %d %q %q", code, stdout, stderr)
	}
	if code, _, stderr := run("init"); code != 1 || !strings.Contains(stderr, "has a CA already") {
		t.Errorf("a second ca init: %d %q", code, stderr)
	}
	code, stdout, stderr := run("issue", "node", "gpu007", "--out", out, "--days", "30", "--hosts", "gpu007.example,10.0.0.7")
	if code != 0 || !strings.Contains(stdout, "node certificate for gpu007") {
		t.Fatalf("ca issue: %d %q %q", code, stdout, stderr)
	}
	m, err := pki.Load(pki.DirFiles(out, pki.KindNode))
	if err != nil {
		t.Fatalf("the issued directory: %v", err)
	}
	if self := m.Self(); self.Kind != pki.KindNode || self.Name != "gpu007" || time.Until(m.NotAfter()) > 31*24*time.Hour {
		t.Errorf("issued %v until %v; want node gpu007 for 30 days", self, m.NotAfter())
	}
	if code, _, _ := run("issue", "node", "gpu008"); code != 0 {
		t.Error("ca issue with the default --out")
	} else if _, err := os.Stat(filepath.Join(dir, "issued", "gpu008", "node.key")); err != nil {
		t.Errorf("default --out: %v", err)
	}
	for _, help := range [][]string{{"--help"}, {"issue", "--help"}, {"revoke", "-h"}} {
		if code, stdout, stderr := run(help...); code != 0 || !strings.Contains(stdout, "phalanx-controller ca issue") || stderr != "" {
			t.Errorf("ca %v: exit %d, %q, %q; want the usage on stdout, exit 0", help, code, stdout, stderr)
		}
	}
	for _, bad := range [][]string{
		{"issue", "admin", "x"}, {"issue", "node"}, {"issue", "node", "a/b"}, {"issue", "node", "x", "--days", "0"},
		{"revoke"}, {"revoke", "--serial", "zz"}, {"frobnicate"}, {"issue", "node", "x", "--days", "abc"},
		{"issue", "node", "x", "--hosts", "a b"},
	} {
		if code, _, stderr := run(bad...); code == 0 || stderr == "" || strings.Count(stderr, "\n") != 1 {
			t.Errorf("ca %v: exit %d, %q; want an error of one line", bad, code, stderr)
		}
	}
	if code, stdout, stderr := run("revoke", filepath.Join(out, "node.crt")); code != 0 || !strings.Contains(stdout, "revoked serial "+m.Self().Serial) {
		t.Fatalf("ca revoke: %d %q %q", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, pki.CRLFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, pki.CRLFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.Load(pki.DirFiles(out, pki.KindNode)); !errors.Is(err, pki.ErrRevoked) {
		t.Errorf("a daemon with its revoked certificate: %v", err)
	}
	if code, stdout, stderr := run("revoke", filepath.Join(out, "node.crt")); code != 0 || !strings.Contains(stdout, "already revoked") {
		t.Errorf("revoking it again: %d %q %q; want it said that it is already revoked", code, stdout, stderr)
	}
	// The CA itself: no list it signs can revoke it, and daemons look up
	// only a peer's own serial; a success here would change nothing.
	ca, err := pki.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"revoke", filepath.Join(dir, pki.CACertFile)}, {"revoke", "--serial", ca.Cert.SerialNumber.Text(16)}} {
		if code, stdout, stderr := run(args...); code == 0 || !strings.Contains(stderr, "rotate the CA") {
			t.Errorf("ca %v: %d %q %q; want a refusal that says to rotate the CA", args, code, stdout, stderr)
		}
	}
	if after, err := os.ReadFile(filepath.Join(dir, pki.CRLFile)); err != nil || !bytes.Equal(after, data) {
		t.Errorf("ca.crl changed by a refused revoke (%v)", err)
	}
	// A certificate of another CA: its serial on this list would not stop it.
	other, otherOut := t.TempDir(), t.TempDir()
	for _, args := range [][]string{{"init", "--dir", other}, {"issue", "node", "gpu009", "--dir", other, "--out", otherOut}} {
		var o, e bytes.Buffer
		if code := caCommand(args, &o, &e); code != 0 {
			t.Fatalf("ca %v: %d %q", args, code, e.String())
		}
	}
	if code, _, stderr := run("revoke", filepath.Join(otherOut, "node.crt")); code == 0 || !strings.Contains(stderr, "was not issued by the CA") {
		t.Errorf("revoking another CA's certificate: %d %q; want a refusal", code, stderr)
	}
}

// With TopologyPlugin=topology/tree and no TopologyFile, topology.conf
// beside the config is read, as Slurm reads it; missing, it is an error
// that says where it was looked for.
func TestTopologyBesideTheConfig(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("TopologyPlugin=topology/tree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var cfg controller.Config
	_, err := loadConfig(&cfg, conf, "", log)
	if err == nil || !strings.Contains(err.Error(), "reads topology.conf beside "+conf) {
		t.Errorf("without topology.conf: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "topology.conf"), []byte("SwitchName=leaf1 Nodes=gpu[001-002]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(&cfg, conf, "", log); err != nil {
		t.Fatal(err)
	}
	if cfg.Topology == nil || cfg.Topology.LeafOf("gpu002") != "leaf1" {
		t.Errorf("topology %+v: want gpu002 under leaf1", cfg.Topology)
	}
}

// A bad flag is one line saying what is wrong and where the flags are
// listed; the usage, 60 lines of it, used to come first on stderr and
// push the error out of sight.
func TestBadFlagIsOneLine(t *testing.T) {
	parse := func(args []string) error { _, err := parseFlags(args); return err }
	flagtest.RefusesInOneLine(t, parse, []string{"--bogus"}, "flag provided but not defined: -bogus (phalanx-controller --help lists the flags)")
}
