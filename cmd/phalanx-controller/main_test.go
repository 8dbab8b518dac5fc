package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/auth"
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
	f, err := parseFlags(append([]string{"--config", path, "--data-dir", t.TempDir(), "--auth-key", key}, args...))
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
	f, err := parseFlags([]string{"--config", os.DevNull, "--data-dir", dir, "--auth-key", missing})
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
		f, err := parseFlags(append([]string{"--config", conf, "--data-dir", dir, "--auth-key", key}, tc.args...))
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
