# The web UI's make targets. Included from the top-level Makefile; run make from the repository
# root. See docs/webui.md.
#
#   make web       build web/ into internal/webui/dist (the next go build embeds it)
#   make web-test  Vitest unit tests, then the Playwright end-to-end test in headless chromium
#   make web-dev   Vite dev server on :5173, proxying /api to FRESHET_API (default :8080)

WEB_DIR       ?= web
NPM           ?= npm
CHROMIUM_PATH ?= /usr/bin/chromium
# Written after a successful `npm ci`: a newer lock file (or no node_modules) installs again.
WEB_STAMP     := $(WEB_DIR)/node_modules/.freshet-npm-ci
WEB_SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: web web-deps web-unit web-e2e web-test web-dev web-chromium web-clean

$(WEB_STAMP): $(WEB_DIR)/package-lock.json $(WEB_DIR)/package.json
	cd $(WEB_DIR) && $(NPM) ci --no-audit --no-fund
	@touch $@

## web-deps: install the UI's npm packages (npm ci) when missing or when the lock changed
web-deps: $(WEB_STAMP)

## web: type-check and build the UI into internal/webui/dist; prints the first-load JS size
web: $(WEB_STAMP)
	cd $(WEB_DIR) && $(NPM) run --silent build

## web-unit: the UI's Vitest unit tests
web-unit: $(WEB_STAMP)
	cd $(WEB_DIR) && $(NPM) run --silent test

## web-chromium: install Debian's chromium for the browser test when it is missing
web-chromium:
	@if [ ! -x $(CHROMIUM_PATH) ]; then \
		echo "installing chromium (apt-get)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		$(WEB_SUDO) apt-get install -y chromium fonts-dejavu-core || \
		{ $(WEB_SUDO) apt-get update && $(WEB_SUDO) apt-get install -y chromium fonts-dejavu-core; }; \
	fi

## web-e2e: build the UI and freshet, run `freshet up`, and drive it in headless chromium
## (FRESHET_BIN=path skips the go build; FRESHET_E2E_UI=server|vite|auto; screenshots in .artifacts/)
web-e2e: web web-chromium
	cd $(WEB_DIR) && CHROMIUM_PATH=$(CHROMIUM_PATH) $(NPM) run --silent e2e

## web-test: unit tests and the browser test
web-test: web-unit web-e2e

## web-dev: the Vite dev server with hot reload on http://127.0.0.1:5173; run `make up` beside it
web-dev: $(WEB_STAMP)
	cd $(WEB_DIR) && FRESHET_API=$${FRESHET_API:-http://127.0.0.1:8080} $(NPM) run dev

web-clean:
	find internal/webui/dist -mindepth 1 ! -name .gitkeep -delete
