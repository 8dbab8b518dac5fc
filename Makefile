# Phalanx build. `make demo` and `make test` need only Go and make (plus
# apt-get, as root, for the containerd test's daemon; see .ci/run).

SHELL    := /bin/bash
GO       ?= go
BIN      := bin
PKGS     := ./...
GOFLAGS  ?=
export GOFLAGS

.PHONY: all build proto proto-check fmt-check vet test test-short fuzz demo bench bench-scheduler bench-controller bench-sbatch bench-health gpu-check chaos chaos-controller lint clean tools

all: build

build: $(BIN)/phx $(BIN)/phx-full $(BIN)/phalanx-controller $(BIN)/phalanx-agent $(BIN)/phalanx-shim

# The controller and the CLI are pure Go; the agent needs cgo for NVML.
# Build tags, for every binary and the tests alike:
#   no_dynamic_plugins: containerd's client imports Go's plugin package,
#     which makes the linker bind every symbol at load; NVML's optional
#     symbols then fail to resolve. Without plugins the agent loads with
#     lazy binding.
#   grpcnotrace, urfave_cli_no_docs: leave out grpc's x/net/trace (and the
#     html/template it pulls in) and urfave/cli's man-page generator, which
#     nothing uses and which every phx start would initialise.
TAGS := no_dynamic_plugins,grpcnotrace,urfave_cli_no_docs
# phx --version names the commit (also where the toolchain records none,
# as with -buildvcs=false).
COMMIT := $(shell git describe --always --dirty 2>/dev/null)
# phx is the small front end users run; it hands the common commands to a
# daemon's CLI server, or becomes phx-full (the whole CLI) beside it.
$(BIN)/phx: FORCE
	CGO_ENABLED=0 $(GO) build -o $@ ./cmd/phx
$(BIN)/phx-full: FORCE
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -ldflags "-X github.com/phalanx-hpc/phalanx/cli.commit=$(COMMIT)" -o $@ ./cmd/phx-full
$(BIN)/phalanx-controller: FORCE
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -o $@ ./cmd/phalanx-controller
$(BIN)/phalanx-agent: FORCE
	CGO_ENABLED=1 $(GO) build -tags $(TAGS) -o $@ ./cmd/phalanx-agent
# The supervisor of each plain-process task, which the agent finds beside it.
$(BIN)/phalanx-shim: FORCE
	CGO_ENABLED=0 $(GO) build -o $@ ./cmd/phalanx-shim
FORCE:

# buf and the protoc plugins run as Go tools from tools/go.mod: no remote
# plugins, no BSR.
tools: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc
$(BIN)/buf: tools/go.mod
	cd tools && $(GO) build -o ../$@ github.com/bufbuild/buf/cmd/buf
$(BIN)/protoc-gen-go: tools/go.mod
	cd tools && $(GO) build -o ../$@ google.golang.org/protobuf/cmd/protoc-gen-go
$(BIN)/protoc-gen-go-grpc: tools/go.mod
	cd tools && $(GO) build -o ../$@ google.golang.org/grpc/cmd/protoc-gen-go-grpc

proto: tools
	$(BIN)/buf lint
	$(BIN)/buf generate

# Regenerate and fail if the checked-in code differs.
proto-check: proto
	@git diff --exit-code -- api/ || { echo "generated code is out of date: run 'make proto' and commit api/"; exit 1; }
	@test -z "$$(git status --porcelain -- api/)" || { git status --porcelain -- api/; echo "untracked generated files: run 'make proto' and commit api/"; exit 1; }

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt needed on:"; echo "$$out"; exit 1; }

vet:
	$(GO) vet -tags $(TAGS) $(PKGS)

lint: fmt-check vet tools
	$(BIN)/buf lint

# The tests, then every fuzz target for a short while (TEST_FUZZTIME each;
# the seed corpora also run with the tests). A count, not a duration: Go
# 1.26's fuzzer can fail a target with "context deadline exceeded" when a
# -fuzztime duration ends while a worker is busy (golang/go#75804, fixed
# in 1.27), which a loaded CI machine hits.
# Minimizing a new interesting input takes up to a minute by default, most
# of it on targets whose inputs are slow to parse (topology's, which expand
# host lists): bounded by a count too.
TEST_FUZZTIME ?= 20000x
TEST_FUZZFLAGS ?= -fuzzminimizetime=200x
test: fmt-check vet proto-check build
	$(GO) test -race -tags $(TAGS) -timeout 20m $(PKGS)
	$(MAKE) fuzz FUZZTIME=$(TEST_FUZZTIME) FUZZFLAGS=$(TEST_FUZZFLAGS)

test-short:
	$(GO) test -short $(PKGS)

# Every fuzz target (func FuzzXxx in a _test.go file) for FUZZTIME each, one
# after another: go test -fuzz takes one package and one target at a time.
# An input that fails is saved under the package's testdata/fuzz/FuzzXxx/:
# fix the bug and keep the file, which then runs with the package's tests.
# FUZZFLAGS adds go test flags (e.g. -parallel 2).
FUZZTIME  ?= 10s
FUZZFLAGS ?=
fuzz:
	@set -e; for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for target in $$(grep -h -o '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | cut -c6-); do \
			echo "== $$dir $$target ($(FUZZTIME))"; \
			$(GO) test -tags $(TAGS) -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) $$dir; \
		done; \
	done

# Benchmarks. bench-controller runs phalanx-controller processes (one, or
# three in a Raft group) with real fsync: durable submits per second by
# clients and queue depth, leader kill -> next acknowledged submit, memory
# with 100,000 finished and 10,000 queued jobs. bench-sbatch times the phx
# sbatch command itself on a phx dev cluster of 3 controllers, from one
# shell and from eight; scripts/slurm-sbatch-rate.sh times Slurm's sbatch
# the same way (see docs/operations.md).
BENCHTIME ?= 2000x
SBATCH_N  ?= 2000
bench: bench-scheduler bench-controller

bench-scheduler:
	$(GO) test -run '^$$' -bench . -benchmem ./scheduler/...

bench-sbatch: build
	scripts/sbatch-rate.sh $(SBATCH_N)

# Issue 9's health figures on phx dev: agent CPU at idle, and the time from
# an injected RDMA link fault to the node's DRAIN in phx sinfo -R.
bench-health: build
	scripts/fault-drain.sh

bench-controller:
	$(GO) test -tags $(TAGS) -run '^$$' -bench 'Controller' -benchtime $(BENCHTIME) -timeout 60m ./testcluster/

# On a GPU host, as root: a one-host cluster on the real NVIDIA driver,
# secured as README's real cluster, and the checks of
# scripts/gpu-host-check.sh (docs/health.md#checking-a-gpu-host).
gpu-check: build
	CGO_ENABLED=1 $(GO) test -c -tags $(TAGS) -o $(BIN)/gpu.test ./nodeagent/gpu
	scripts/gpu-host-check.sh $(GPU_CHECK_REPORT)

# Issue 10's chaos table: faults under a running 2-node job on phx dev
# (real agent processes): kill -9 of an agent, an XID, a link down, a hang,
# a user failure three times; the time to detect and to run again, and the
# checkpoint step resumed from (scripts/chaos.sh).
chaos: build
	scripts/chaos.sh

# The chaos test (it also runs, for 45s, in make test) for longer, with a
# seed: CHAOS_DURATION=10m CHAOS_SEED=42 make chaos-controller. It prints
# what it did (operations, faults, elections, the longest time without a
# successful write) and every anomaly it found, and keeps the figures in
# chaos-report.json and the whole output, replicas' logs included, in
# chaos.log.
CHAOS_DURATION ?= 5m
CHAOS_SEED     ?= 0
CHAOS_CLIENTS  ?= 4
chaos-controller:
	set -o pipefail; $(GO) test -tags $(TAGS) -count=1 -v -run '^TestChaos$$' -timeout 3h ./testcluster/ \
		-args -chaos.duration=$(CHAOS_DURATION) -chaos.seed=$(CHAOS_SEED) -chaos.clients=$(CHAOS_CLIENTS) \
		-chaos.report=$(CURDIR)/chaos-report.json 2>&1 | tee $(CURDIR)/chaos.log | grep -v ' level='

demo: build
	./scripts/demo.sh

clean:
	rm -rf $(BIN)
