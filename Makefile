# Phalanx build. `make demo` and `make test` need only Go and make (plus
# apt-get, as root, for the containerd test's daemon; see .ci/run).

GO       ?= go
BIN      := bin
PKGS     := ./...
GOFLAGS  ?=
export GOFLAGS

.PHONY: all build proto proto-check fmt-check vet test test-short demo bench lint clean tools

all: build

build: $(BIN)/phx $(BIN)/phalanx-controller $(BIN)/phalanx-agent

# The controller and the CLI are pure Go; the agent needs cgo for NVML.
# no_dynamic_plugins: containerd's client imports Go's plugin package, which
# makes the linker bind every symbol at load; NVML's optional symbols then
# fail to resolve. Without plugins the agent loads with lazy binding.
$(BIN)/phx: FORCE
	CGO_ENABLED=0 $(GO) build -o $@ ./cmd/phx
$(BIN)/phalanx-controller: FORCE
	CGO_ENABLED=0 $(GO) build -o $@ ./cmd/phalanx-controller
$(BIN)/phalanx-agent: FORCE
	CGO_ENABLED=1 $(GO) build -tags no_dynamic_plugins -o $@ ./cmd/phalanx-agent
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
	$(GO) vet -tags no_dynamic_plugins $(PKGS)

lint: fmt-check vet tools
	$(BIN)/buf lint

test: fmt-check vet proto-check build
	$(GO) test -race -tags no_dynamic_plugins -timeout 20m $(PKGS)

test-short:
	$(GO) test -short $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./scheduler/...

demo: build
	./scripts/demo.sh

clean:
	rm -rf $(BIN)
