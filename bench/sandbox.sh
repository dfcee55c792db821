#!/usr/bin/env bash
# Sandbox benchmarks in one go: per-call latency of exec `true`, read_file
# 4 KiB and write_file 4 KiB through the persistent jailed worker, against
# the same unjailed (bare) and against a fresh bubblewrap jail per call;
# and the worker's cold start. Prints the median of COUNT runs and ratios.
#
#   bench/sandbox.sh            # COUNT=5 BENCHTIME=300x
#   COUNT=9 BENCHTIME=1s RAW=/tmp/raw.txt bench/sandbox.sh   # RAW keeps go test output
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
BENCHTIME=${BENCHTIME:-300x}
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)  (2 shared cores: numbers move with the load)"
out=$(go test -run '^$' -bench '^Benchmark(ExecTrue|ReadFile4K|WriteFile4K|ColdStart)$' \
	-benchtime "$BENCHTIME" -count "$COUNT" ./internal/sandbox)
echo "# load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${RAW:-}" ]; then echo "$out" > "$RAW"; fi
echo "$out" | awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	v[name] = v[name] " " $3
}
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function us(ns) { return sprintf("%10.1f µs", ns / 1000) }
END {
	for (k in v) m[k] = median(v[k])
	printf "%-30s %s\n", "benchmark (median)", "per call"
	n = split("ExecTrue/worker ExecTrue/bare ExecTrue/bwrap-per-call ReadFile4K/worker ReadFile4K/bare WriteFile4K/worker WriteFile4K/bare ColdStart", keys, " ")
	for (i = 1; i <= n; i++) printf "%-30s %s\n", keys[i], us(m[keys[i]])
	print ""
	printf "exec true:   worker / bare           = %5.2fx   (goal <= 1.2x)\n", m["ExecTrue/worker"] / m["ExecTrue/bare"]
	printf "exec true:   bwrap-per-call / worker = %5.2fx   (goal >= 5x)\n", m["ExecTrue/bwrap-per-call"] / m["ExecTrue/worker"]
	printf "read 4 KiB:  worker / bare           = %5.2fx   (goal: worker median < 200 µs: %s)\n", m["ReadFile4K/worker"] / m["ReadFile4K/bare"], us(m["ReadFile4K/worker"])
	printf "write 4 KiB: worker / bare           = %5.2fx   (goal: worker median < 200 µs: %s)\n", m["WriteFile4K/worker"] / m["WriteFile4K/bare"], us(m["WriteFile4K/worker"])
	printf "cold start:  %s\n", us(m["ColdStart"])
}'
