#!/usr/bin/env bash
# Tool calls per second: over one `warden mcp` stdio session against one
# `warden tool call` process per call, for read_file (4 B file) and
# run_command `true`, and read_file with 8 calls in flight on the session;
# sandbox off, then on (a persistent jailed worker).
set -euo pipefail
cd "$(dirname "$0")/.."
for sb in 0 1; do
	echo "sandbox=$sb"
	WARDEN_BENCH_SANDBOX=$sb go test -run '^$' -bench '^Benchmark(Stdio|StdioInFlight|Process)$' \
		-benchtime "${BENCHTIME:-2s}" -count "${COUNT:-1}" ./internal/mcp | grep '^Benchmark'
done
