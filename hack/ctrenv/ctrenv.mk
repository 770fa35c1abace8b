# The loopback container environment and Freshet's own image (see docs/testing.md,
# "Containers"). Included by the top-level Makefile, which runs from the repository root.
#
#   make containers-deps  install the Debian packages (podman, runc, docker-registry, busybox-static…)
#                         when missing (apt-get, as root)
#   make registry         start the loopback registry $(REGISTRY_NAME): prints REGISTRY=127.0.0.1:PORT,
#                         the user, password and CA, and how to log in
#   make registry-down    stop it (data, password and CA stay for the next `make registry`)
#   make test-images      build the busybox-based test images (cached) and push them to the registry
#   make engine           start Podman's Docker API service trusting the registry: prints DOCKER_HOST=unix://…
#   make engine-down      stop it and every container it runs (images stay)
#   make image            build the freshet image and push it to IMAGE (default: the loopback registry,
#                         freshet:$(VERSION)); IMAGE_OCI=file also writes an OCI layout tarball
#   make image-oci        only write the OCI layout tarball ($(IMAGE_OCI)), push nothing

GO              ?= go
# The tool (its own Go program in this module; links go-containerregistry, not freshet). Ignored by git.
CTRENV          ?= hack/ctrenv/ctrenv
CTRENV_SRC      := $(wildcard hack/ctrenv/*.go) go.mod go.sum
REGISTRY_NAME   ?= dev
ENGINE_NAME     ?= dev
# Where `make image` pushes: REGISTRY/REPOSITORY[:TAG]; empty means $(REGISTRY_NAME)'s address/freshet:$(VERSION).
IMAGE           ?=
IMAGE_PLATFORMS ?= linux/$(shell $(GO) env GOARCH)
# scratch (CA certificates, /tmp, passwd) or busybox (adds a shell; the build machine's platform only).
IMAGE_BASE      ?= scratch
IMAGE_OCI       ?=
# The UI is built first so the image embeds it; IMAGE_WEB= skips that (the image then serves no UI).
IMAGE_WEB       ?= web

.PHONY: containers-deps registry registry-down test-images engine engine-down image image-oci

$(CTRENV): $(CTRENV_SRC)
	$(GO) build -o $@ ./hack/ctrenv

containers-deps: $(CTRENV)
	@$(CTRENV) deps

registry: $(CTRENV)
	@$(CTRENV) registry up --name $(REGISTRY_NAME)

registry-down: $(CTRENV)
	$(CTRENV) registry down --name $(REGISTRY_NAME)

# The registry is started (quietly) when it is not running.
CTRENV_REGISTRY_UP = $(CTRENV) registry up --quiet --name $(REGISTRY_NAME)

test-images: $(CTRENV)
	@$(CTRENV_REGISTRY_UP)
	@$(CTRENV) test-images --registry $(REGISTRY_NAME)

engine: $(CTRENV)
	@$(CTRENV_REGISTRY_UP)
	@$(CTRENV) engine up --name $(ENGINE_NAME) --registry $(REGISTRY_NAME)

engine-down: $(CTRENV)
	$(CTRENV) engine down --name $(ENGINE_NAME)

CTRENV_IMAGE_FLAGS = --registry $(REGISTRY_NAME) --version $(VERSION) --platform $(IMAGE_PLATFORMS) --base $(IMAGE_BASE)

image: $(IMAGE_WEB) $(CTRENV)
	@$(if $(IMAGE),,$(CTRENV_REGISTRY_UP))
	@$(CTRENV) image $(CTRENV_IMAGE_FLAGS) $(if $(IMAGE),--image $(IMAGE)) $(if $(IMAGE_OCI),--oci-layout $(IMAGE_OCI))

image-oci: $(IMAGE_WEB) $(CTRENV)
	@$(CTRENV) image $(CTRENV_IMAGE_FLAGS) $(if $(IMAGE),--image $(IMAGE)) --push=false --oci-layout $(or $(IMAGE_OCI),bin/freshet-image.tar)
