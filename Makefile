# The two commands the README starts with.
GO ?= go

.PHONY: install test deps check fmt vet lint race fuzz bench

install:
	$(GO) install ./cmd/warden

# staticcheck, as scripts/test-deps installs it (pinned) into GOPATH/bin.
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

# The packages whose tests run a second time under the race detector: those
# where goroutines share state (brokers and their channels, the store, the
# HTTP server and its streams, the engine, MCP sessions, the agent loop, the
# audit sinks, the composition that wires them, the sandbox's workers, streams
# and control socket, the command runner, the checkpoint scanner).
RACE_PKGS ?= ./internal/approval/... ./internal/store/... ./internal/server/... ./internal/engine/... \
	./internal/mcp/... ./internal/agent/... ./internal/audit/... ./internal/app/... \
	./internal/sandbox/... ./internal/command/... ./internal/checkpoint/...
# The egress proxy's connections, questions and audit share state too.
RACE_PKGS += ./internal/egress/...

# The whole test suite, as CI runs it (CI also sets WARDEN_REQUIRE_SANDBOX=1,
# so a test that needs the jail fails instead of skipping): the checks, the
# tests, then the concurrent packages' tests again under -race.
test: deps check
	$(GO) test -count=1 -timeout 40m ./...
	$(MAKE) race

deps:
	./scripts/test-deps

# gofmt, go vet for amd64 and arm64, staticcheck: each fails listing what
# it found.
check: fmt vet lint

fmt:
	@files=$$(gofmt -l .); \
	if [ -n "$$files" ]; then echo "gofmt: these files are not formatted (run gofmt -w):"; echo "$$files"; exit 1; fi

vet:
	GOARCH=amd64 $(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./...

lint:
	@test -x $(STATICCHECK) || { echo "staticcheck is not installed at $(STATICCHECK): run ./scripts/test-deps"; exit 1; }
	$(STATICCHECK) ./...

race:
	$(GO) test -race -count=1 -timeout 40m $(RACE_PKGS)
	$(GO) test -race -count=1 -run 'Concurrent' ./internal/shellpolicy/

# Run every fuzz target for FUZZTIME each (default 30s).
FUZZTIME ?= 30s
fuzz:
	./scripts/fuzz-all $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
