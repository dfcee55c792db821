#!/usr/bin/env bash
# Tool calls per second: over one `warden mcp` stdio session against one
# `warden tool call` process per call, for read_file (4 B file) and
# run_command `true`, and read_file with 8 calls in flight on the session;
# sandbox off, then on (a persistent jailed worker). The session benchmarks
# also report the CPU time the `warden mcp` process spent per call
# (server-µs/call): the client shares the cores, so calls per second alone
# do not say which side changed.
#
# BASE=<git revision> also times that revision's warden, alternating with
# this tree's in the same run (the client is this tree's benchmark), so the
# ratio holds on a loaded machine. COUNT rounds (default 1), BENCHTIME per
# benchmark (default 2s), BENCH the -bench pattern.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/warden" ./cmd/warden
go test -c -o "$tmp/mcp.test" ./internal/mcp
bins=("$tmp/warden")
if [ -n "${BASE:-}" ]; then
	mkdir "$tmp/base"
	git archive "$BASE" | tar -x -C "$tmp/base"
	(cd "$tmp/base" && go build -o "$tmp/warden-base" ./cmd/warden)
	bins=("$tmp/warden-base" "$tmp/warden")
fi
echo "load: $(cat /proc/loadavg)"
for sb in 0 1; do
	for _ in $(seq "${COUNT:-1}"); do
		for bin in "${bins[@]}"; do
			name="this tree"
			[ "$bin" = "$tmp/warden-base" ] && name="$BASE"
			echo "sandbox=$sb warden=$name"
			(cd internal/mcp && WARDEN_BENCH_SANDBOX=$sb WARDEN_BENCH_BIN="$bin" "$tmp/mcp.test" -test.run '^$' \
				-test.bench "${BENCH:-^Benchmark(Stdio|StdioInFlight|Process)$}" -test.benchtime "${BENCHTIME:-2s}") |
				grep '^Benchmark'
		done
	done
done
echo "load: $(cat /proc/loadavg)"
