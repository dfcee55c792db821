#!/usr/bin/env bash
# Per-call latency of `true` through the docker backend's persistent worker,
# against a `docker exec` per call into the same container and a
# `docker run --rm` per call, in one run. The benchmark starts its own
# dockerd (no bridge, no iptables) on temporary directories and imports a
# busybox + glibc image made on the spot, so it needs root, docker.io and
# busybox-static. Prints the medians over COUNT runs and the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-5}
out=$(go test -run '^$' -bench '^BenchmarkDockerExecTrue$' -benchtime "${BENCHTIME:-30x}" -count "$count" ./internal/sandbox)
echo "$out" | grep '^Benchmark'
echo "$out" | awk '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^BenchmarkDockerExecTrue\/worker-/               { w[++nw] = $3 }
/^BenchmarkDockerExecTrue\/docker-exec-per-call-/ { e[++ne] = $3 }
/^BenchmarkDockerExecTrue\/docker-run-per-call-/  { r[++nr] = $3 }
END {
	if (nw == 0 || ne == 0 || nr == 0) { print "missing results (was the benchmark skipped?)"; exit 1 }
	mw = median(w, nw); me = median(e, ne); mr = median(r, nr)
	printf "exec true, persistent worker:  %8.2f ms\n", mw / 1e6
	printf "exec true, docker exec:        %8.2f ms  (%.1fx the worker)\n", me / 1e6, me / mw
	printf "exec true, docker run --rm:    %8.2f ms  (%.1fx the worker)\n", mr / 1e6, mr / mw
}'
