#!/usr/bin/env bash
# The agent loop's overhead per step, without model latency: a 10-step run
# (9 read_file calls on a 4 KiB file, then an answer) against the scripted
# OpenAI-compatible server on loopback, and the same run with an in-process
# model (no adapter, no HTTP). Also the engine call and one adapter call
# alone. Prints the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-5}
out=$(go test -run '^$' -bench '^Benchmark(LoopStep|LoopStepNoHTTP|EngineReadFile|AdapterComplete)$' \
	-benchtime "${BENCHTIME:-200x}" -count "$count" ./internal/agent)
echo "$out" | grep '^Benchmark'
echo "$out" | awk '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^BenchmarkLoopStep-/        { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/step") s[++ns] = $i }
/^BenchmarkLoopStepNoHTTP-/  { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/step") n[++nn] = $i }
/^BenchmarkEngineReadFile-/  { e[++ne] = $3 }
/^BenchmarkAdapterComplete-/ { a[++na] = $3 }
END {
	ms = median(s, ns); mn = median(n, nn); me = median(e, ne); ma = median(a, na)
	printf "per step, scripted server over HTTP: %.0f µs\n", ms / 1000
	printf "per step, in-process model:          %.0f µs (engine read_file %.0f µs, loop %.0f µs)\n", mn / 1000, me / 1000, (mn - me) / 1000
	printf "one adapter call, 5 results of 4 KiB + 11 schemas: %.0f µs\n", ma / 1000
}'
