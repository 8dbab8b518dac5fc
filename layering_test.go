package phalanx_test

import (
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// The layering rules of docs/architecture.md, checked on the non-test import
// graph (go list -deps). A package named in a rule that does not exist yet is
// skipped with a log line, so the rules can land before the code; once it
// exists it is enforced.

const module = "github.com/phalanx-hpc/phalanx"

// External modules named by the rules.
const (
	grpc       = "google.golang.org/grpc"
	raft       = "github.com/hashicorp/raft"
	raftBolt   = "github.com/hashicorp/raft-boltdb"
	bbolt      = "go.etcd.io/bbolt"
	boltdb     = "github.com/boltdb/bolt"
	containerd = "github.com/containerd/containerd"
	nvml       = "github.com/NVIDIA/go-nvml"
)

func local(p string) string { return module + "/" + p }

type layerRule struct {
	pkgs      []string // package directories, relative to the module root; "x/..." includes subpackages
	forbidden []string // import path prefixes
}

var layerRules = []layerRule{
	{
		pkgs: []string{"scheduler", "topology/...", "cluster", "store", "config"},
		forbidden: []string{local("controller"), grpc, raft, raftBolt, containerd,
			local("nodeagent"), local("cli")},
	},
	{
		pkgs:      []string{"scheduler", "topology/..."},
		forbidden: []string{local("store"), bbolt, boltdb},
	},
	{
		pkgs: []string{"cli/..."},
		forbidden: []string{local("controller"), local("store"), local("scheduler"),
			local("nodeagent"), raft, raftBolt, bbolt, boltdb, nvml},
	},
	{
		pkgs:      []string{"controller/..."},
		forbidden: []string{nvml, containerd},
	},
	{
		// Built with CGO_ENABLED=0: NVML (cgo) stays inside the agent.
		pkgs:      []string{"cmd/phx-full", "cmd/phalanx-controller", "devcluster", "sim"},
		forbidden: []string{nvml, containerd, local("nodeagent")},
	},
	{
		// Credentials: used by the daemons and by phx alike, so it
		// depends on none of them.
		pkgs: []string{"auth"},
		forbidden: []string{local("controller"), local("store"), local("scheduler"), local("nodeagent"),
			local("cli"), raft, bbolt, containerd, nvml},
	},
	{
		// The cluster CA and TLS: the standard library only, for every
		// daemon and for phx.
		pkgs: []string{"pki"},
		forbidden: []string{local("controller"), local("store"), local("scheduler"), local("nodeagent"),
			local("cli"), local("auth"), local("api"), grpc, raft, bbolt, containerd, nvml},
	},
	{
		// Checkpoint staging: files and checksums, driven by the agent;
		// phx reads its marker name. No gRPC, no project package above it.
		pkgs: []string{"checkpoint"},
		forbidden: []string{local("controller"), local("store"), local("scheduler"), local("nodeagent"),
			local("cli"), local("api"), local("runtime"), grpc, raft, bbolt, containerd, nvml},
	},
	{
		pkgs:      []string{"sim"},
		forbidden: []string{local("controller"), local("store"), grpc, raft, bbolt},
	},
}

func TestLayering(t *testing.T) {
	for _, r := range layerRules {
		for _, p := range r.pkgs {
			if !exists(p) {
				t.Logf("%s: no Go package yet, rule not checked", p)
				continue
			}
			for _, dep := range deps(t, "./"+p) {
				if f := matchAny(dep, r.forbidden); f != "" {
					t.Errorf("%s must not import %s (it depends on %s)", p, f, dep)
				}
			}
		}
	}
}

// TestTestHelpersOnlyInTests: test helper packages (testcluster, and any
// package whose name ends in "test", like httptest) are for _test files and
// for cmd/phx-full (which runs `phx dev`). Helpers may use one another.
func TestTestHelpersOnlyInTests(t *testing.T) {
	for _, p := range list(t, "./...") {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if rel == "cmd/phx-full" || isTestHelper(p) {
			continue
		}
		for _, dep := range deps(t, p) {
			if dep != p && strings.HasPrefix(dep, module+"/") && isTestHelper(dep) {
				t.Errorf("%s must not import test helper %s outside _test files", p, dep)
			}
		}
	}
}

// TestPhxFrontIsSmall: phx, the front end every command starts, links
// the standard library and internal/cliwire only. Anything more (gRPC,
// protobuf, TLS, urfave/cli) is what phx-full is for: it would be
// initialised at every start of every command.
func TestPhxFrontIsSmall(t *testing.T) {
	allowed := map[string]bool{local("cmd/phx"): true, local("internal/cliwire"): true}
	heavy := map[string]bool{"net": true, "crypto/tls": true, "net/http": true, "text/template": true}
	for _, dep := range deps(t, "./cmd/phx") {
		first, _, _ := strings.Cut(dep, "/")
		std := !strings.Contains(first, ".") // the standard library's paths have no dot
		if allowed[dep] || std && !heavy[dep] {
			continue
		}
		t.Errorf("cmd/phx must not import %s: phx starts with every command; leave it to phx-full", dep)
	}
}

// TestShimIsSmall: phalanx-shim, which supervises each plain-process
// task for as long as it runs, links the standard library (no network),
// x/sys and the packages of runtime/process only: gRPC, protobuf or
// containerd's client would cost every task their start and their memory.
func TestShimIsSmall(t *testing.T) {
	allowed := map[string]bool{}
	for _, p := range []string{"cmd/phalanx-shim", "runtime/process", "runtime", "cluster", "internal/durable"} {
		allowed[local(p)] = true
	}
	heavy := map[string]bool{"net": true, "crypto/tls": true, "net/http": true, "text/template": true}
	for _, dep := range deps(t, "./cmd/phalanx-shim") {
		first, _, _ := strings.Cut(dep, "/")
		std := !strings.Contains(first, ".")
		if allowed[dep] || std && !heavy[dep] || strings.HasPrefix(dep, "golang.org/x/sys/") {
			continue
		}
		t.Errorf("cmd/phalanx-shim must not import %s: it runs beside every task for the task's life", dep)
	}
}

func isTestHelper(importPath string) bool {
	base := path.Base(importPath)
	return base == "testcluster" || strings.HasSuffix(base, "test")
}

func matchAny(dep string, prefixes []string) string {
	for _, f := range prefixes {
		if dep == f || strings.HasPrefix(dep, f+"/") {
			return f
		}
	}
	return ""
}

// exists reports whether the directory (or, for "x/...", x) holds non-test
// Go files.
func exists(p string) bool {
	dir := filepath.FromSlash(strings.TrimSuffix(p, "/..."))
	if strings.HasSuffix(p, "/...") {
		_, err := os.Stat(dir)
		return err == nil && len(list(nil, "./"+p)) > 0
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			return true
		}
	}
	return false
}

// list returns the import paths matched by a pattern; t may be nil, in which
// case failure yields nothing.
func list(t *testing.T, pattern string) []string {
	return goList(t, "-e", "-f", "{{.ImportPath}}", pattern)
}

// deps returns the non-test transitive imports of the packages matched by
// pattern, including themselves. -e keeps a package that does not compile
// yet (another package still being written) from hiding the rest.
func deps(t *testing.T, pattern string) []string {
	return goList(t, "-e", "-deps", "-f", "{{.ImportPath}}", pattern)
}

func goList(t *testing.T, args ...string) []string {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		if t != nil {
			msg := ""
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				msg = string(ee.Stderr)
			}
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, msg)
		}
		return nil
	}
	return strings.Fields(string(out))
}

// TestLayeringSeesImports guards the checker itself: if go list stopped
// reporting dependencies, every rule above would pass vacuously.
func TestLayeringSeesImports(t *testing.T) {
	got := deps(t, "./topology/hostlist")
	if matchAny(local("cluster"), got) == "" {
		t.Fatalf("deps of topology/hostlist = %v, want it to include %s", got, local("cluster"))
	}
	if matchAny(local("cluster/x"), []string{local("cluster")}) == "" || matchAny(raftBolt+"/v2", []string{raft}) != "" {
		t.Fatal("matchAny: prefix matching is wrong")
	}
	if !isTestHelper(local("runtime/containerd/containerdtest")) || !isTestHelper(local("testcluster")) || isTestHelper(local("cluster")) {
		t.Fatal("isTestHelper: wrong classification")
	}
}
