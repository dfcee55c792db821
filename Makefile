# The two commands the README starts with.
GO ?= go

.PHONY: install test vet fuzz bench

install:
	$(GO) install ./cmd/warden

# The whole test suite, as CI runs it (CI also sets WARDEN_REQUIRE_SANDBOX=1,
# so a test that needs the jail fails instead of skipping).
test:
	./scripts/test-deps
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 40m ./...

# Run every fuzz target for FUZZTIME each (default 30s).
FUZZTIME ?= 30s
fuzz:
	./scripts/fuzz-all $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
