# The gateway's tasks. `make help` lists them.
GO        ?= go
BIN       := bin/gateway
DATA_DIR  ?= ./.data
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
# staticcheck is pinned (v0.8.2 is its 2026.2.2 release): a new release's checks change what lint passes.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck-$(STATICCHECK_VERSION)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the tasks
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: build media-tools ## run the whole stack (API, worker, embedded Temporal + UI, and the local engines: Apertium, PocketSphinx, ffmpeg and tesseract) with `gateway dev --local-engines`, installing the engines first when it can
	$(BIN) dev --data-dir $(DATA_DIR) --local-engines

.PHONY: engines
engines: ## install the programs media jobs and local engines use (ffmpeg, tesseract, Apertium APy, PocketSphinx and its English model, flite for the tests) with apt-get; Debian or Ubuntu, as root
	scripts/install-engines

.PHONY: media-tools
media-tools: ## make run's tool step: install ffmpeg and the local engines (as make engines) when they are missing and apt-get can (root on Debian or Ubuntu); otherwise say how, and run without them
	@scripts/install-engines --if-possible

.PHONY: build
build: ## build bin/gateway
	$(GO) build -o $(BIN) ./cmd/gateway

PROD_BIN  ?= bin/gateway-prod
PROD_TAGS ?= nodev
# The release version `gateway version` prints: the tag (git describe),
# "dev" outside a checkout. REVISION is for builds without .git (the image
# build); with .git the Go toolchain records the commit itself.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILDINFO := github.com/ai-job-gateway/gateway/internal/buildinfo
LDFLAGS   := -s -w -X $(BUILDINFO).Version=$(or $(VERSION),dev) -X $(BUILDINFO).Revision=$(REVISION)

.PHONY: build-prod
build-prod: ## build the production binary deploy/Dockerfile builds (PROD_TAGS=nodev: without dev and the dev identity provider) into PROD_BIN, versioned VERSION (default: git describe --tags --always --dirty, else dev)
	CGO_ENABLED=0 $(GO) build -tags '$(PROD_TAGS)' -trimpath -ldflags="$(LDFLAGS)" -o $(PROD_BIN) ./cmd/gateway

.PHONY: test
test: test-tools ## run every test: unit, workflow, API, and integration on PostgreSQL and SQLite (installs the media tools and engines first when it can; where no PostgreSQL answers at TEST_DATABASE_URL, on a throwaway one of its own)
	TEST_DATABASE_URL='$(TEST_DATABASE_URL)' scripts/with-postgres $(GO) test -count=1 -timeout 30m ./...

.PHONY: test-tools
test-tools: ## install what the media, engine and browser tests run (ffmpeg, tesseract, Apertium APy, PocketSphinx, flite, Chromium) when it is missing and apt-get can (root on Debian or Ubuntu); otherwise say how: those tests then skip
	@scripts/install-engines --if-possible --browser

BUSY_LOOPS ?= 2

.PHONY: test-busy
test-busy: ## run every test (make test) beside BUSY_LOOPS busy loops (default 2) at normal priority: the suite must pass on a busy machine (docs/reliability.md, Busy machines)
	@scripts/test-busy $(BUSY_LOOPS) $(MAKE) --no-print-directory test

.PHONY: test-short
test-short: ## the fast tests only (no embedded Temporal server)
	TEST_DATABASE_URL='$(TEST_DATABASE_URL)' scripts/with-postgres $(GO) test -short -count=1 ./...

FUZZTIME ?= 10s

.PHONY: fuzz
fuzz: ## run each fuzz target (every func Fuzz* in a test file) for FUZZTIME (default 10s); seeds are in <package>/testdata/fuzz
	@set -e; for file in $$(git ls-files '*_test.go' | xargs grep -l '^func Fuzz'); do \
	  for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
	    echo "== $$name (./$$(dirname $$file))"; \
	    dir=$$(dirname $$file); \
	    if ! $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./$$dir; then \
	      if [ -n "$$(git status --porcelain -- $$dir/testdata/fuzz/$$name)" ]; then exit 1; fi; \
	      echo "== $$name failed without a failing input (the fuzz engine's own deadline); once more"; \
	      $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./$$dir; \
	    fi; \
	  done; \
	done

BENCH_JOBS ?= 1000000
BENCHTIME  ?= 2s

.PHONY: bench
bench: ## every benchmark: bench-load, bench-list, bench-console, bench-media, bench-events, bench-auth, bench-fairness, then bench-overload (all run; fails if a gateway request or job of any failed, or bench-fairness or bench-overload misses its target)
	@status=0; $(MAKE) --no-print-directory bench-load || status=1; \
	$(MAKE) --no-print-directory bench-list || status=1; \
	$(MAKE) --no-print-directory bench-console || status=1; \
	$(MAKE) --no-print-directory bench-media || status=1; \
	$(MAKE) --no-print-directory bench-events || status=1; \
	$(MAKE) --no-print-directory bench-auth || status=1; \
	$(MAKE) --no-print-directory bench-fairness || status=1; \
	$(MAKE) --no-print-directory bench-overload || status=1; exit $$status

.PHONY: bench-media
bench-media: ## benchmark: a transcription's media stage over a 1 GiB video, and by how much it raises peak RSS (makes the video once in the temp dir; about a minute)
	$(GO) test -run '^$$' -bench MediaStageOneGiB -benchtime 1x -count=1 -timeout 20m ./activities/

.PHONY: bench-transcription
bench-transcription: ## benchmark: sphinx-local recognizes a 10-minute file of flite sentences for real (time and memory per audio minute, word error rate: docs/benchmarks.md, Local transcription; about 80 s)
	SPHINX_LONG=1 $(GO) test -run 'TestTenMinutesInChunksWithFlatMemory' -count=1 -v -timeout 20m ./providers/sphinx/

.PHONY: bench-auth
bench-auth: ## benchmark: 1,000 made-up API keys against 1,000 bad JWTs, all refused 401 by one API on PostgreSQL (the keys' time over the JWTs' at most 1; seconds)
	TEST_DATABASE_URL='$(TEST_DATABASE_URL)' $(GO) test -run '^$$' -bench RefusedCredentials -benchtime 1x -count=1 -timeout 5m ./api/

.PHONY: bench-events
bench-events: ## benchmark: 2,000 clients following 100 jobs' event streams on one API (time to open them all, and for an event to reach them all; under a minute)
	$(GO) test -run '^$$' -bench EventStreamSubscribers -benchtime 1x -count=1 -timeout 10m ./api/

.PHONY: bench-list
bench-list: ## benchmarks: job listing latency on PostgreSQL at BENCH_JOBS jobs (default one million, seeded once) and the SQLite store's job writes; about two minutes
	TEST_DATABASE_URL='$(TEST_DATABASE_URL)' BENCH_JOBS='$(BENCH_JOBS)' $(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -count=1 -timeout 30m ./store/

.PHONY: console-screenshots
console-screenshots: ## the screenshots of docs/console.md, taken by the console's browser test in headless Chromium (make test-tools installs it)
	CONSOLE_SCREENSHOTS=$(CURDIR)/docs/images $(GO) test -run '^TestConsoleInABrowser$$' -count=1 ./cmd/gateway/

.PHONY: bench-console
bench-console: ## benchmark: the console's pages' server time for the largest tenant on PostgreSQL at BENCH_JOBS jobs (default one million, seeded once; fails if a page's p99 is over 300 ms; a few minutes)
	TEST_DATABASE_URL='$(TEST_DATABASE_URL)' BENCH_JOBS='$(BENCH_JOBS)' $(GO) test -run '^$$' -bench ConsolePages -benchtime 1x -count=1 -timeout 40m ./api/console/

BENCH_LOAD_FLAGS ?=

.PHONY: bench-load
bench-load: ## benchmarks: the gateway beside the floor and the baseline (bare Temporal), in the dev and the production shape: create, end to end, reads at BENCH_JOBS jobs, peak RSS (about 27 minutes; BENCH_LOAD_FLAGS=-quick: 15)
	TEST_DATABASE_URL='$(TEST_DATABASE_URL)' $(GO) run ./cmd/gatewaybench -json bin/bench-results.json $(BENCH_LOAD_FLAGS)

.PHONY: bench-overload
bench-overload: ## benchmark: creates beyond what the workers start, production shape, at 200/s then twice the rate jobs completed (fails unless each is accepted within 50 ms or shed with 429 within 10 ms, none timing out; about 4 minutes)
	TEST_DATABASE_URL='$(TEST_DATABASE_URL)' $(GO) run ./cmd/gatewaybench -phases overload -shapes production -json bin/bench-overload.json

.PHONY: bench-fairness
bench-fairness: ## benchmark: tenant B's ten jobs' time to start right after tenant A's thousand, against an idle gateway, five runs on fresh deployments (dev; fails if the median of B's p95 over idle is over 2×; about two minutes)
	$(GO) run ./cmd/gatewaybench -phases fairness -shapes dev -json bin/bench-fairness.json

.PHONY: bench-scaleout
bench-scaleout: ## benchmark: jobs completed per second with 1 and 2 workers and their slots, 200 ms provider calls, 1,000 jobs in flight (production shape, PostgreSQL; about 4 minutes)
	$(GO) run ./cmd/gatewaybench -phases scaleout -shapes production -json bin/bench-scaleout.json

TS_SDK := clients/typescript

.PHONY: generate
generate: ## regenerate from api/openapi.yaml the typed Go client api/client (oapi-codegen, a tool of go.mod; docs/api.md, Go client) and the TypeScript SDK's types clients/typescript/src/schema.ts (its pinned openapi-typescript, after npm ci when its node_modules is missing or older than its lock; skipped, saying so, without npm)
	$(GO) generate ./api/client
	@if command -v npm >/dev/null 2>&1; then \
	  if [ ! $(TS_SDK)/node_modules/.package-lock.json -nt $(TS_SDK)/package-lock.json ]; then \
	    (cd $(TS_SDK) && npm ci --no-audit --no-fund --loglevel=error) || exit 1; \
	  fi; \
	  (cd $(TS_SDK) && npm run --silent generate) || exit 1; \
	else \
	  echo "npm is missing: $(TS_SDK)/src/schema.ts was not regenerated, nor checked (install Node.js and npm)"; \
	fi

.PHONY: generate-check
generate-check: ## regenerate api/client and clients/typescript/src and fail if that changed them (a committed client is stale; the TypeScript part is skipped without npm)
	@$(MAKE) --no-print-directory generate
	@git diff --exit-code -- api/client $(TS_SDK)/src && test -z "$$(git ls-files --others --exclude-standard -- api/client $(TS_SDK)/src)" || \
	  (git status --short -- api/client $(TS_SDK)/src; echo "api/client or $(TS_SDK)/src is not what api/openapi.yaml generates: run make generate and commit it"; exit 1)

.PHONY: lint
lint: generate-check ## the generated client is current (generate-check), gofmt, go vet and staticcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt: the files above need formatting"; exit 1)
	$(GO) vet ./...
	$(GO) vet -tags nodev ./cmd/gateway
	@test -x $(STATICCHECK) || (export GOBIN=$$(mktemp -d) && $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && mkdir -p $(dir $(STATICCHECK)) && mv $$GOBIN/staticcheck $(STATICCHECK))
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags nodev ./cmd/...

.PHONY: token
token: ## print a dev token with every job scope and usage:read (tenant "acme")
	@$(GO) run ./cmd/gateway token --data-dir $(DATA_DIR) --tenant acme --sub dev-user \
	  --scope "transcriptions:read transcriptions:write translations:read translations:write video-analyses:read video-analyses:write llm-tasks:read llm-tasks:write usage:read"

.PHONY: clean
clean: ## remove the binary and the dev data dir
	rm -rf bin $(DATA_DIR)

SOAK_DURATION ?= 10m
SOAK_RATE     ?= 12

.PHONY: soak
soak: ## the soak: the production shape under SOAK_RATE jobs/s (default 12, 70 % of the measured sustained rate) for SOAK_DURATION (default 10m), a worker kill, a 20 s PostgreSQL partition and a Temporal restart injected; prints the ledger (docs/reliability.md)
	TEST_DATABASE_URL='$(TEST_DATABASE_URL)' GATEWAY_SOAK='$(SOAK_DURATION)' GATEWAY_SOAK_RATE='$(SOAK_RATE)' \
	  $(GO) test -run '^TestSoak$$' -count=1 -v -timeout 60m ./cmd/gateway
