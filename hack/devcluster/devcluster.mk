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

# REAL_NODE=1: also a real node (kubelet on Debian's containerd and runc) beside the kwok node,
# pulling from the loopback registry $(REGISTRY_NAME) (started, with the test images and the
# pause image pushed); needs root. Remembered by the instance until `devcluster down --purge`.
REAL_NODE        ?=

devcluster-build: $(DEVCLUSTER)
	$(DEVCLUSTER) build $(if $(REAL_NODE),--real-node)

devcluster: devcluster-build $(if $(REAL_NODE),test-images)
ifeq ($(REAL_NODE),)
	@$(DEVCLUSTER) up --name $(DEVCLUSTER_NAME)
else
	@eval "$$($(CTRENV) registry env --name $(REGISTRY_NAME))" && \
	FRESHET_DEVCLUSTER_REGISTRY_PASSWORD="$$REGISTRY_PASSWORD" $(DEVCLUSTER) up --name $(DEVCLUSTER_NAME) --timeout 5m \
		--real-node --registry "$$REGISTRY" --registry-user "$$REGISTRY_USER" \
		--registry-password-env FRESHET_DEVCLUSTER_REGISTRY_PASSWORD --registry-ca "$$REGISTRY_CA_FILE" \
		--pause-image "$$REGISTRY/freshet-test/pause:v1"
endif
	@echo 'use it:  eval "$$($(DEVCLUSTER) env --name $(DEVCLUSTER_NAME))" && kubectl get nodes'

devcluster-status: $(DEVCLUSTER)
	@$(DEVCLUSTER) status --name $(DEVCLUSTER_NAME)

devcluster-down: $(DEVCLUSTER)
	$(DEVCLUSTER) down --name $(DEVCLUSTER_NAME)

devcluster-test:
	cd $(DEVCLUSTER_DIR) && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) test -race -count=1 ./...
