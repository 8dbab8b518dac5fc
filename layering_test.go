package phalanx_test

import (
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The layering of docs/architecture.md, checked on the non-test import
// graph: allowedImports lists every package and the module packages it may
// import (an allowlist: a new package must declare its place), and
// layerRules the external modules (gRPC, Raft, bbolt, containerd, NVML)
// that packages must not reach, even indirectly (go list -deps).

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

// allowedImports is the module's packages and, for each, the module
// packages it may import directly outside its tests: an allowlist. A
// package missing here fails TestImportsAreDeclared, and so does a new
// import between two packages, so each new package or edge is a decision
// made here, in the open (docs/architecture.md gives the gist). External
// modules are checked by layerRules.
var allowedImports = map[string][]string{
	// The domain and the pure layers: nothing of ours, or the domain.
	"cluster":           {},
	"topology/hostlist": {"cluster"},
	"topology":          {"cluster", "topology/hostlist"},
	"config":            {"cluster", "topology", "topology/hostlist"},
	"scheduler":         {"cluster", "topology", "topology/hostlist"},
	"sim":               {"cluster", "scheduler", "topology"},

	// Generated API, small leaves shared by daemons and phx.
	".":                    {}, // the module's doc and layering tests
	"api/phalanx/v1":       {},
	"api/phalanx/state/v1": {},
	"internal/cliwire":     {},
	"internal/durable":     {},
	"internal/freeport":    {},
	"internal/flagtest":    {},
	"auth":                 {},
	"pki":                  {"internal/durable"},
	"checkpoint":           {"internal/durable"},
	"apiclient":            {"api/phalanx/v1"},

	// The replicated state and the controller.
	"store/codec":    {"api/phalanx/state/v1", "cluster"},
	"store":          {"api/phalanx/state/v1", "cluster", "internal/durable", "store/codec"},
	"controller/fsm": {"api/phalanx/state/v1", "cluster", "store", "store/codec"},
	"controller": {"api/phalanx/v1", "apiclient", "auth", "cluster", "config", "controller/fsm", "internal/durable",
		"pki", "scheduler", "store", "store/codec", "topology", "topology/hostlist"},

	// How tasks run, and the node agent.
	"runtime":                           {"cluster"},
	"runtime/process":                   {"cluster", "internal/durable", "runtime"},
	"runtime/containerd":                {"cluster", "runtime"},
	"runtime/fake":                      {"cluster", "runtime"},
	"runtime/runtimetest":               {},
	"runtime/containerd/containerdtest": {},
	"internal/fakegpu":                  {"cluster"},
	"internal/fakesysfs":                {"cluster", "internal/durable"},
	"nodeagent/gpu":                     {"cluster", "internal/fakegpu"},
	"nodeagent/rdma":                    {"cluster"},
	"nodeagent": {"api/phalanx/v1", "apiclient", "auth", "checkpoint", "cluster", "internal/cliwire", "internal/durable",
		"nodeagent/gpu", "nodeagent/rdma", "pki", "runtime", "topology/hostlist"},

	// The command line.
	"cli/getopt": {},
	"cli/sbatch": {"api/phalanx/v1", "cli/getopt", "cluster", "topology/hostlist"},
	"cli": {"api/phalanx/v1", "apiclient", "auth", "checkpoint", "cli/getopt", "cli/sbatch", "cluster", "internal/cliwire",
		"pki", "topology/hostlist"},

	// Clusters for phx dev and for tests.
	"devcluster": {"api/phalanx/v1", "apiclient", "auth", "cli", "cluster", "config", "internal/cliwire", "internal/fakegpu",
		"internal/fakesysfs", "internal/freeport", "pki", "topology"},
	"testcluster": {"api/phalanx/v1", "apiclient", "auth", "cli", "cluster", "config", "controller", "internal/cliwire",
		"internal/fakegpu", "internal/fakesysfs", "internal/freeport", "nodeagent", "nodeagent/gpu", "nodeagent/rdma", "pki",
		"runtime", "runtime/fake", "runtime/process", "topology"},

	// The programs.
	"cmd/phx":                {"internal/cliwire"},
	"cmd/phx-full":           {"cli", "cluster", "devcluster", "scheduler", "sim", "topology"},
	"cmd/phalanx-controller": {"apiclient", "auth", "cli", "cluster", "config", "controller", "pki", "topology"},
	"cmd/phalanx-shim":       {"runtime/process"},
	"cmd/phalanx-agent": {"apiclient", "auth", "cli", "internal/fakesysfs", "nodeagent", "nodeagent/gpu",
		"nodeagent/rdma", "pki", "runtime", "runtime/containerd", "runtime/process"},
}

// TestImportsAreDeclared checks every package of the module against
// allowedImports, and that every package declared there exists.
func TestImportsAreDeclared(t *testing.T) {
	seen, edges := map[string]bool{}, 0
	for _, line := range goListLines(t, "-e", "-f", "{{.ImportPath}}:{{range .Imports}} {{.}}{{end}}", "./...") {
		p, imports, _ := strings.Cut(line, ":")
		rel := relative(p)
		seen[rel] = true
		allowed, ok := allowedImports[rel]
		if !ok {
			t.Errorf("package %s is not declared: add it to allowedImports in layering_test.go with the module packages it may import", rel)
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			edges++
			if !slices.Contains(allowed, relative(imp)) {
				t.Errorf("%s imports %s, which allowedImports does not allow it: import something it may, or declare the edge there if it belongs", rel, relative(imp))
			}
		}
	}
	if edges == 0 {
		t.Fatal("go list reported no import between the module's packages: the check would pass vacuously")
	}
	for p := range allowedImports {
		if !seen[p] {
			t.Errorf("allowedImports declares %s, which is no package of the module: remove it", p)
		}
	}
}

// relative is an import path of the module relative to its root ("." for
// the root).
func relative(importPath string) string {
	if importPath == module {
		return "."
	}
	return strings.TrimPrefix(importPath, module+"/")
}

func TestLayering(t *testing.T) {
	for _, r := range layerRules {
		for _, p := range r.pkgs {
			if !exists(p) {
				t.Errorf("layerRules name %s, which holds no Go package: remove it from the rule", p)
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
	return strings.Fields(strings.Join(goListLines(t, args...), "\n"))
}

// goListLines is go list's output, a line each.
func goListLines(t *testing.T, args ...string) []string {
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
	return strings.Split(strings.TrimSpace(string(out)), "\n")
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
