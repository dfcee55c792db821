#!/usr/bin/env bash
# read_file of a 4 KiB file through warden's whole engine (lookup, schema,
# guards, policy, confined read, audit) against os.ReadFile, in one run.
# Prints both medians and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-5}
out=$(go test -run '^$' -bench '^BenchmarkReadFile(Engine|OS)$' -benchtime "${BENCHTIME:-1s}" -count "$count" ./internal/engine)
echo "$out" | grep '^Benchmark'
echo "$out" | awk '
/^BenchmarkReadFileEngine/ { e[++ne] = $3 }
/^BenchmarkReadFileOS/     { o[++no] = $3 }
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	me = median(e, ne); mo = median(o, no)
	printf "read_file 4 KiB: engine %.1f µs, os.ReadFile %.1f µs, ratio %.1fx\n", me / 1000, mo / 1000, me / mo
}'
