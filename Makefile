# Voda — build, test and verify. `make help` lists the targets.

GO       ?= go
BIN      ?= bin
PKGS     ?= ./...
FUZZTIME ?= 20s
BENCHTIME ?= 1s
# Packages of the pure core: they must not import Kubernetes or net/http.
CORE     := pkg/api pkg/algorithm pkg/placement pkg/quota pkg/scheduler

# The container image (make image): assembled without a container engine.
VERSION  ?= 0.1.0
IMAGE    ?= ghcr.io/vodascheduler/voda:$(VERSION)
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)

# Integration tests: every test whose name contains this, in every package.
INTEGRATION ?= Integration
# A test binary's time limit: the controller's and the API's integration
# suites run one control plane through many scenarios each, beyond go
# test's default 10 minutes when both run at once on 2 cores.
TEST_TIMEOUT ?= 30m
# Fake GPU nodes of `make dev-cluster`: NODES nodes of GPUS GPUs per type in TYPES.
NODES    ?= 4
GPUS     ?= 4
TYPES    ?= nvidia-tesla-v100,nvidia-gtx-1080ti

.PHONY: help build test test-unit test-integration tools dev-cluster generate verify bench image fuzz fuzz-short eval demo clean

help: ## Show this help.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  %-17s %s\n", $$1, $$2}'

build: ## Build the voda binary into bin/.
	$(GO) build -o $(BIN)/voda ./cmd/voda

# Tests run under hack/leakcheck: a process a test started and did not end
# (a browser, a control-plane component) fails the run, named, once go test
# has exited.
LEAKCHECK := $(GO) run ./hack/leakcheck --

test: tools ## Run every test, unit and integration, with the race detector; fails if a test leaves a process running.
	$(LEAKCHECK) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)

test-unit: ## Run the tests that start no external processes (no binaries needed).
	$(GO) test -short -count=1 $(PKGS)

test-integration: tools ## Run the tests against a local control plane (names contain Integration); fails if a test leaves a process running.
	$(LEAKCHECK) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(INTEGRATION)' $(PKGS)

tools: ## Build the local control plane (etcd, Kubernetes, kwok, the operators, helm, scheduler-plugins) from pinned modules into .cache/tools.
	@hack/tools/build.sh

dev-cluster: ## Run a local control plane with fake GPU nodes until Ctrl-C (builds only what it runs: no helm, no scheduler-plugins).
	@hack/tools/build.sh k8s etcd kwok mpi-operator training-operator
	NODES=$(NODES) GPUS=$(GPUS) TYPES=$(TYPES) $(GO) run ./hack/devcluster

generate: ## Regenerate the TrainingJob deep copies and CRD YAML with controller-gen.
	@hack/generate.sh

verify: ## gofmt, go vet, go mod tidy, the core import rule, no build outputs or large files in git, generated files up to date.
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^hack/tools/')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@cp go.mod /tmp/voda.go.mod.bak; cp go.sum /tmp/voda.go.sum.bak 2>/dev/null || true; \
	  $(GO) mod tidy; \
	  if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changed go.mod/go.sum; run it and commit"; \
	    cp /tmp/voda.go.mod.bak go.mod; cp /tmp/voda.go.sum.bak go.sum 2>/dev/null || true; exit 1; fi
	@hack/check-imports.sh $(CORE)
	@hack/check-files.sh
	@hack/generate.sh --check

bench: ## Run the benchmarks (results in bench.txt).
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS) | tee bench.txt

image: ## Build the container image IMAGE into bin/voda-image.tar, no container engine needed (PUSH=1 also pushes it).
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags "-s -w -X github.com/vodascheduler/voda/internal/cli.Version=$(VERSION)" -o $(BIN)/voda-linux ./cmd/voda
	$(GO) run ./hack/image --binary $(BIN)/voda-linux --arch $(IMAGE_ARCH) --version $(VERSION) --tag $(IMAGE) --out $(BIN)/voda-image.tar $(if $(PUSH),--push,)

fuzz: ## Run every fuzz target for FUZZTIME each.
	@hack/fuzz-all.sh $(FUZZTIME)

# Budgets are counts, not durations: with a duration, Go 1.26's fuzzing
# coordinator can fail a clean run with "context deadline exceeded" as the
# time runs out (go.dev/issue/75804, fixed in Go 1.27). About 10 s each here.
fuzz-short: ## Fuzz what parses untrusted input (API bodies, original job files, PyTorchJobs) briefly; CI runs it.
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeJob$$' -fuzztime 20000x ./pkg/server
	$(GO) test -run '^$$' -fuzz '^FuzzFromMPIJob$$' -fuzztime 100000x ./pkg/compat
	$(GO) test -run '^$$' -fuzz '^FuzzFromPyTorchJob$$' -fuzztime 50000x ./pkg/compat

eval: ## Regenerate docs/evaluation.md from ../shared/traces (all policies, 4 loads).
	$(GO) run ./hack/eval

demo: ## Run the main job: every policy on the built-in synthetic workload.
	$(GO) run ./cmd/voda simulate

clean: ## Remove build outputs.
	rm -rf $(BIN) bench.txt
