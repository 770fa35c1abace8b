# Loopback Kubernetes for tests and for trying GitOps locally (see docs/testing.md).
# Included by the top-level Makefile, which runs from the repository root.
#
#   make devcluster-build    build the binaries once per machine (cached outside the clone)
#   make devcluster          build + start instance $(DEVCLUSTER_NAME); prints its kubeconfig path
#   make devcluster-status   what runs, with RSS
#   make devcluster-down     stop instance $(DEVCLUSTER_NAME)
#   make devcluster-test     the devcluster tool's own tests (a separate Go module)

GO               ?= go
DEVCLUSTER_DIR   ?= hack/devcluster
DEVCLUSTER_NAME  ?= dev
# The tool itself: stdlib only, builds in about a second. Ignored by git.
DEVCLUSTER       ?= $(DEVCLUSTER_DIR)/devcluster
DEVCLUSTER_SRC   := $(wildcard $(DEVCLUSTER_DIR)/*.go) $(DEVCLUSTER_DIR)/go.mod $(DEVCLUSTER_DIR)/kwok-stages.yaml

.PHONY: devcluster-build devcluster devcluster-down devcluster-status devcluster-test

$(DEVCLUSTER): $(DEVCLUSTER_SRC)
	cd $(DEVCLUSTER_DIR) && GOWORK=off $(GO) build -o $(abspath $(DEVCLUSTER)) .

devcluster-build: $(DEVCLUSTER)
	$(DEVCLUSTER) build

devcluster: devcluster-build
	@$(DEVCLUSTER) up --name $(DEVCLUSTER_NAME)
	@echo 'use it:  eval "$$($(DEVCLUSTER) env --name $(DEVCLUSTER_NAME))" && kubectl get nodes'

devcluster-status: $(DEVCLUSTER)
	@$(DEVCLUSTER) status --name $(DEVCLUSTER_NAME)

devcluster-down: $(DEVCLUSTER)
	$(DEVCLUSTER) down --name $(DEVCLUSTER_NAME)

devcluster-test:
	cd $(DEVCLUSTER_DIR) && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) test -race -count=1 ./...
