# Freshet's make targets are its interface: `make up` runs it, `make test` tests it.
GO       ?= go
BIN      ?= bin/freshet
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/freshet-dev/freshet/internal/version.Version=$(VERSION)
STATICCHECK_VERSION ?= v0.8.2
FUZZTIME ?= 10s
export GOFLAGS ?= -buildvcs=false

CHART_REGISTRY ?=
CHART_VERSION  ?=

.PHONY: chart all build up test test-deps s3-server test-real-node test-short lint vet fmt bench bench-lint bench-gitops bench-rollouts bench-workflows bench-workflows-real-node bench-events bench-events-real-node bench-containers bench-analytics bench-replay bench-notify bench-helm bench-billing bench-authz faults generate check fuzz security clean

all: build

## build: compile bin/freshet
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/freshet

## up: build (UI included) and run the whole platform on embedded defaults (http://127.0.0.1:8080)
up: web build
	./$(BIN) up

## test: vet, lint and every test with the race detector (PostgreSQL suites and `make chaos` run when
## FRESHET_TEST_POSTGRES is set; Kubernetes suites when the devcluster binaries are built;
## container suites when `make containers-deps` installed their Debian packages, as root)
test: vet web test-deps
	FRESHET_TEST_S3=1 FRESHET_CTRENV_TOOL=$(abspath $(CTRENV)) $(GO) test -race -count=1 -timeout 20m ./...
	$(MAKE) --no-print-directory test-real-node
	$(MAKE) --no-print-directory devcluster-test
	$(MAKE) --no-print-directory web-test
	$(if $(FRESHET_TEST_POSTGRES),$(MAKE) --no-print-directory chaos,@echo "chaos suite skipped: it needs FRESHET_TEST_POSTGRES")

## test-deps: what the suites need besides Go modules and npm packages: the loopback Kubernetes
## binaries (built once, cached outside the clone) and Debian's container packages (apt-get)
test-deps: REAL_NODE := 1
test-deps: devcluster-build containers-deps s3-server

## s3-server: MinIO's server, the real S3-compatible server of the workflow artifact tests
## (internal/testenv/s3env), built once per machine from the Go module proxy (≈ 4 CPU-min cold)
## and cached outside the clone; S3_SERVER_VERSION must match s3env.MinIOVersion
S3_SERVER_VERSION ?= v0.0.0-20260212201848-7aac2a2c5b7c
S3_CACHE          ?= $(if $(FRESHET_S3_CACHE),$(FRESHET_S3_CACHE),$(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/freshet/s3)
S3_SERVER         := $(S3_CACHE)/minio-$(S3_SERVER_VERSION)/minio
s3-server: $(S3_SERVER)
$(S3_SERVER):
	GOBIN=$(dir $@) $(GO) install github.com/minio/minio@$(S3_SERVER_VERSION)

## test-real-node: the tests on the loopback cluster's real node (kubelet, containerd, runc; root):
## pods that really run, a builder pod, build and push steps through the kubernetes executor, a
## workflow whose pods run the emissary.
## FULL=1 adds the executor's whole contract suite there (≈ 5 min) and a runner installed from
## the freshet image and a hosted runtime placed by the control plane from it (build the image:
## minutes with a cold Go cache).
test-real-node: test-deps
	FRESHET_TEST_REAL_NODE=1 FRESHET_TEST_KUBE=1 FRESHET_TEST_S3=1 FRESHET_CTRENV_TOOL=$(abspath $(CTRENV)) $(GO) test -race -count=1 -timeout 30m \
		-run '^TestRealNode(Artifacts)?$(if $(FULL),|^TestContract$$|^TestRunnerOnRealNode$$|^TestHostedRuntimesOnRealNode$$|^TestPlatformChartOnRealNode$$)' \
		./internal/testenv/kube/ ./internal/runner/executor/kubernetes/ ./internal/gitops/workflows/ $(if $(FULL),./internal/runtimes/install/ ./internal/server/)

## test-short: the unit tests only, fast
test-short:
	$(GO) test -count=1 -short ./...

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

## lint: gofmt, go vet and staticcheck
lint: vet
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

## bench: measure start-up, memory and API latency; prints tables (see docs/benchmarks.md)
bench: build
	$(GO) run ./hack/bench --binary $(BIN)
	$(GO) run ./internal/tunnel/bench
	$(MAKE) --no-print-directory bench-gitops
	$(MAKE) --no-print-directory bench-rollouts
	$(MAKE) --no-print-directory bench-workflows
	$(MAKE) --no-print-directory bench-events
	$(MAKE) --no-print-directory bench-containers
	$(MAKE) --no-print-directory bench-lint
	$(MAKE) --no-print-directory bench-analytics
	$(MAKE) --no-print-directory bench-replay
	$(MAKE) --no-print-directory bench-notify
	$(MAKE) --no-print-directory bench-helm
	$(MAKE) --no-print-directory bench-billing
	$(MAKE) --no-print-directory bench-authz

## bench-lint: pipeline lint of 1,000 codefresh.yml files, median and p99 time per file
bench-lint:
	$(GO) test -count=1 -run '^$$' -bench Lint1000Files -benchtime 5x ./internal/pipeline/spec/ | grep -E '^(Benchmark|ok|FAIL)'

## bench-authz: what attribute-based rules add to a request, in an account with 1,000 rules over
## 100 teams (SQLite, and PostgreSQL with FRESHET_TEST_POSTGRES); see docs/benchmarks.md
bench-authz:
	$(GO) test -count=1 -run '^$$' -bench BenchmarkAuthorization -benchtime 20000x ./internal/identity/ | grep -E '^(Benchmark|ok|FAIL)'

## bench-billing: 100 concurrent build starts at a concurrent-build limit of 3 (SQLite, and
## PostgreSQL with FRESHET_TEST_POSTGRES): none over the limit; claim latency with the limit
## check beside the same claims without it (baseline); and 100 application creates admitted
## at once at an applications limit of 3 beside the same 100 one after another (baseline)
bench-billing:
	$(GO) test -count=1 -run '^$$' -bench 'Claims100|AppCreates100' -benchtime 5x ./internal/billing/ | grep -E '^(Benchmark|ok|FAIL)'

## bench-analytics: DORA reports over 1,000,000 deployment records of 10,000 applications
## (SQLite, and PostgreSQL with FRESHET_TEST_POSTGRES), and event → visible in analytics
bench-analytics:
	$(GO) run ./hack/bench --only analytics

## bench-replay: `freshet admin analytics rebuild --reset` over 1,000,000 recorded syncs of 10,000
## applications, wall time and memory (SQLite, and PostgreSQL with FRESHET_TEST_POSTGRES)
bench-replay:
	$(GO) run ./hack/bench --only replay

## bench-notify: a GitOps event on the bus → its webhook post received (300 events one at a time;
## SQLite, and PostgreSQL with FRESHET_TEST_POSTGRES)
bench-notify:
	FRESHET_NOTIFY_BENCH=$${FRESHET_NOTIFY_BENCH:-300} $(GO) test -count=1 -run 'TestBenchEventToDelivered' -v ./internal/notify/ | grep -E '^(BENCH|--- |ok|FAIL)'

## bench-containers: the container executor on the loopback engine: step start against plain
## podman run, a rebuild from the layer cache, 20 concurrent builds of 20 steps (leaks counted)
bench-containers:
	FRESHET_CONTAINERS_BENCH=1 FRESHET_TEST_CONTAINERS=1 $(GO) test -count=1 -run 'TestBench' -v -timeout 40m ./internal/runner/executor/container/ | grep -E '^(BENCH|--- |ok|FAIL)'

## bench-gitops: the GitOps engine against the loopback cluster: first sync, refresh of 100 and
## 1,000 apps, an app of 500 child apps, an ApplicationSet of 500 apps, 100 apps from one Helm
## chart repository and from one OCI registry (the loopback registry), webhook to Synced (engine
## alone, and through freshet up's control plane and tunnel)
bench-gitops: devcluster-build
	FRESHET_TEST_KUBE=1 FRESHET_ENGINE_BENCH=$${FRESHET_ENGINE_BENCH:-100,1000} $(GO) test -count=1 -run 'TestRefreshBenchmark|TestWebhookToSynced$$' -v -timeout 40m ./internal/gitops/engine/ | grep -E '^(BENCH|--- |ok|FAIL)'
	FRESHET_TEST_KUBE=1 FRESHET_ENGINE_BENCH_APP_OF_APPS=$${FRESHET_ENGINE_BENCH_APP_OF_APPS:-500} $(GO) test -count=1 -run 'TestAppOfAppsBenchmark' -v -timeout 20m ./internal/gitops/engine/ | grep -E '^(BENCH|--- |ok|FAIL)'
	FRESHET_TEST_KUBE=1 FRESHET_APPSET_BENCH=$${FRESHET_APPSET_BENCH:-500} $(GO) test -count=1 -run 'TestApplicationSetBenchmark' -v -timeout 20m ./internal/gitops/appset/ | grep -E '^(BENCH|--- |ok|FAIL)'
	FRESHET_TEST_KUBE=1 FRESHET_TEST_CONTAINERS=1 FRESHET_ENGINE_BENCH_CHART_APPS=$${FRESHET_ENGINE_BENCH_CHART_APPS:-100} $(GO) test -count=1 -run 'TestChartRepoBenchmark|TestOCIChartBenchmark' -v -timeout 20m ./internal/gitops/engine/ | grep -E '^(BENCH|--- |ok|FAIL)'
	FRESHET_TEST_KUBE=1 $(GO) test -count=1 -run 'TestPushWebhookToSynced' -v ./internal/e2e/ | grep -E '^(BENCH|--- |ok|FAIL)'

## bench-rollouts: the Rollouts controller against the loopback cluster: promote → next step's
## objects written (p50/p99), 100 Rollouts through a 5-step canary (wall, CPU-s, RSS)
bench-rollouts: devcluster-build
	FRESHET_TEST_KUBE=1 FRESHET_ROLLOUTS_BENCH=1 $(GO) test -count=1 -run 'TestReactionTime|TestAnalysisReactionTime|TestPauseReactionTime|TestManyRollouts' -v -timeout 40m ./internal/gitops/rollouts/ | grep -E '^(BENCH|--- |ok|FAIL)'

## bench-workflows: the workflow controller against the loopback cluster: a 100-node DAG of
## trivial containers end to end (wall, CPU-s, RSS), beside 100 bare pods in 10 waves; submit → first pod
## Running (p50/p99) beside a bare pod; 50 workflows at once (wall, CPU-s, RSS, API requests)
bench-workflows: devcluster-build
	FRESHET_TEST_KUBE=1 FRESHET_WORKFLOWS_BENCH=1 $(GO) test -count=1 -run 'TestBenchDAG100|TestBenchSubmitToRunning|TestBench50Workflows' -v -timeout 30m ./internal/gitops/workflows/ | grep -E '^(BENCH|--- |ok|FAIL)'

## bench-workflows-real-node: the same three workflow benches on the loopback cluster's real node
## (kubelet, containerd, runc; root): busybox pods from the loopback registry really run, beside
## bare pods on that node as the baseline
bench-workflows-real-node: test-deps
	FRESHET_TEST_REAL_NODE=1 FRESHET_TEST_KUBE=1 FRESHET_WORKFLOWS_BENCH=1 FRESHET_CTRENV_TOOL=$(abspath $(CTRENV)) $(GO) test -count=1 -run 'TestBenchRealNode' -v -timeout 40m ./internal/gitops/workflows/ | grep -E '^(BENCH|\s*--- |ok|FAIL)'

## bench-events: the events and workflow controllers against the loopback cluster and the test NATS:
## a signed GitHub push → the Workflow its Sensor creates, seen by a watch, and → its first pod
## Running and its phase Running (p50/p99/max), beside a create alone → seen and → first pod Running
bench-events: devcluster-build
	FRESHET_TEST_KUBE=1 FRESHET_EVENTS_BENCH=1 $(GO) test -count=1 -run 'TestBenchWebhookToWorkflow$$' -v -timeout 10m ./internal/gitops/events/ | grep -E '^(BENCH|--- |ok|FAIL)'

## bench-events-real-node: bench-events with the Workflows' pods on the loopback cluster's real node
## (kubelet, containerd, runc; root), where they really run: 30 pushes, beside 30 creates
bench-events-real-node: test-deps
	FRESHET_TEST_REAL_NODE=1 FRESHET_TEST_KUBE=1 FRESHET_EVENTS_BENCH=1 FRESHET_CTRENV_TOOL=$(abspath $(CTRENV)) $(GO) test -count=1 -run 'TestBenchWebhookToWorkflowRealNode' -v -timeout 20m ./internal/gitops/events/ | grep -E '^(BENCH|--- |ok|FAIL)'

## bench-helm: a helm step's upgrade round trip against the loopback cluster (median, p99),
## beside the Helm SDK's upgrade alone as the baseline
bench-helm: devcluster-build
	FRESHET_TEST_KUBE=1 FRESHET_HELM_BENCH=$${FRESHET_HELM_BENCH:-30} $(GO) test -count=1 -run 'TestBenchHelmUpgrade' -v -timeout 20m ./internal/runner/ | grep -E '^(BENCH|--- |ok|FAIL)'

## security: the attack suite against real servers (also part of `make test`); prints one row per
## attack category: attempts, successes (must be 0) and the worst latency under abusive input
security:
	@$(GO) test -count=1 -v ./internal/security/ > .security.out 2>&1; status=$$?; \
	printf '%-58s %9s %10s %8s\n' "attack" "attempts" "successes" "worst"; \
	grep '^SECURITY|' .security.out | awk -F'|' '{ printf "%-58s %9s %10s %8s\n", $$2, $$3, $$4, $$5 }'; \
	grep -E '^(--- FAIL|FAIL|ok)' .security.out; rm -f .security.out; exit $$status

## faults: the fault suite (real processes killed mid-work; PostgreSQL when FRESHET_TEST_POSTGRES
## is set); prints its measurements as a table (see docs/benchmarks.md, "Faults")
faults:
	@log=$$(mktemp); $(GO) test -count=1 -v -timeout 10m -run Fault ./internal/faults/ > $$log 2>&1; status=$$?; \
	grep -E '^(--- |ok|FAIL|panic)' $$log; [ $$status -eq 0 ] || grep -vE '^=== |level=DEBUG' $$log | tail -60; \
	echo; printf '%-5s | %-84s | %s\n' item what value; \
	grep -o 'FAULT|.*' $$log | awk -F'|' '{ printf "%-5s | %-84s | %s\n", $$2, $$3, $$4 }'; \
	rm -f $$log; exit $$status

## chaos: the chaos suite (internal/faults TestChaos; FRESHET_TEST_POSTGRES required): 3 `freshet
## server` replicas on PostgreSQL and a 3-node NATS JetStream cluster (nats-server built from
## the module in go.mod, cached in $(NATS_CACHE)), runners and a tunnel runtime under steady
## load; a replica, a runner and a NATS node killed, PostgreSQL frozen, the tunnel cut; prints
## one row per fault (see docs/benchmarks.md, "Chaos"). THROUGHPUT=1 also measures builds/s and
## tunnel requests/s with 3 replicas, then 1
NATS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/freshet/nats
chaos:
	@v=$$($(GO) list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2) && nats=$(NATS_CACHE)/nats-server-$$v && \
	{ [ -x $$nats ] || { mkdir -p $(NATS_CACHE) && $(GO) build -o $$nats.tmp github.com/nats-io/nats-server/v2 && mv $$nats.tmp $$nats; }; } || exit 1; \
	log=$$(mktemp); FRESHET_CHAOS_NATS_SERVER=$$nats $(if $(THROUGHPUT),FRESHET_CHAOS_THROUGHPUT=1) $(GO) test -count=1 -v -timeout 12m -run '^TestChaos$$$(if $(THROUGHPUT),|^TestChaosThroughput$$)' ./internal/faults/ > $$log 2>&1; status=$$?; \
	grep -E '^(--- |ok|FAIL|panic)' $$log; [ $$status -eq 0 ] || grep -vE '^=== |level=DEBUG|level=INFO' $$log | grep -v CHAOS | tail -60; \
	echo; grep -o 'CHAOS .*' $$log; echo; \
	grep -o 'CHAOSROW|.*' $$log | awk -F'|' '{ printf "%-62s %11s %11s %14s %16s %15s %10s | %13s %15s %19s %29s %6s %11s %8s\n", $$2,$$3,$$4,$$5,$$6,$$7,$$8,$$9,$$10,$$11,$$12,$$13,$$14,$$15 }'; echo; \
	grep -o 'CHAOSPROC|.*' $$log | awk -F'|' '{ printf "%-22s %17s %16s %10s %9s\n", $$2,$$3,$$4,$$5,$$6 }'; \
	grep -q 'CHAOSTHRU|' $$log && { echo; grep -o 'CHAOSTHRU|.*' $$log | awk -F'|' '{ printf "%-9s %13s %22s %14s\n", $$2,$$3,$$4,$$5 }'; }; \
	if [ $$status -eq 0 ]; then rm -f $$log; else echo "whole output kept in $$log"; fi; exit $$status

## fuzz: run every fuzz target in the tree (found by hack/fuzz.sh, not listed) for FUZZTIME
## each; FUZZ=REGEXP runs those whose name matches
fuzz:
	GO='$(GO)' FUZZTIME='$(FUZZTIME)' FUZZ='$(FUZZ)' hack/fuzz.sh

## generate: regenerate generated files
generate:
	$(GO) generate ./...

## check: generated files are up to date
check: generate
	git diff --exit-code

clean:
	rm -rf bin

-include hack/devcluster/devcluster.mk
-include hack/ctrenv/ctrenv.mk
-include web/web.mk

# After the include: the prerequisite needs $(CTRENV).
## chart: package the Helm charts (charts/) and push them as OCI charts to CHART_REGISTRY
## (HOST[:PORT][/PATH]; credentials in CHART_REGISTRY_USER/PASSWORD) or, when it is empty, to
## the loopback registry $(REGISTRY_NAME) (started by ctrenv); CHART_VERSION sets their version
chart: $(if $(CHART_REGISTRY),,$(CTRENV))
	$(GO) run ./hack/chart --out dist/charts --ctrenv $(abspath $(CTRENV)) --registry-name $(REGISTRY_NAME) \
		$(if $(CHART_REGISTRY),--registry '$(CHART_REGISTRY)') $(if $(CHART_VERSION),--version '$(CHART_VERSION)' --app-version '$(CHART_VERSION)')
