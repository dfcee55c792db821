#!/usr/bin/env bash
# Egress proxy benchmarks in one go: a jailed command's path (client →
# relay on loopback → unix socket → warden's egress server → origin)
# against the same client going straight to the origin, on loopback.
#   - 100 MB transfer, raw TCP through CONNECT (opaque) and as an HTTPS
#     download (ClientHello checked, then carried): throughput ratio;
#   - 1,000 small requests, each on a new connection, plain HTTP
#     (absolute-form) and HTTPS (CONNECT + TLS): median per request and
#     the proxy's added latency.
# Prints the median of COUNT runs.
#
#   bench/egress.sh              # COUNT=5
#   COUNT=9 RAW=/tmp/raw.txt bench/egress.sh
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)  (2 shared cores: numbers move with the load)"
out=$(go test -run '^$' -bench '^Benchmark(Transfer|TransferHTTPS|NewConnection)$' -benchtime 3x -count "$COUNT" ./internal/egress)
echo "# load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${RAW:-}" ]; then echo "$out" > "$RAW"; fi
echo "$out" | awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "MB/s") mb[name] = mb[name] " " $i
		if ($(i+1) == "median-µs/req") us[name] = us[name] " " $i
	}
}
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	printf "%-32s %12s\n", "100 MB transfer (median)", "MB/s"
	split("Transfer/direct Transfer/proxy TransferHTTPS/direct TransferHTTPS/proxy", k, " ")
	for (i = 1; i <= 4; i++) { m[k[i]] = median(mb[k[i]]); printf "%-32s %12.0f\n", k[i], m[k[i]] }
	printf "raw TCP:  proxy / direct = %4.2fx   (goal >= 0.8x)\n", m["Transfer/proxy"] / m["Transfer/direct"]
	printf "HTTPS:    proxy / direct = %4.2fx   (goal >= 0.8x)\n", m["TransferHTTPS/proxy"] / m["TransferHTTPS/direct"]
	print ""
	printf "%-32s %12s\n", "1,000 new connections (median)", "µs/request"
	split("NewConnection/http/direct NewConnection/http/proxy NewConnection/https/direct NewConnection/https/proxy", c, " ")
	for (i = 1; i <= 4; i++) { m[c[i]] = median(us[c[i]]); printf "%-32s %12.0f\n", c[i], m[c[i]] }
	printf "http:   added %5.0f µs per new connection   (goal <= 1000 µs)\n", m["NewConnection/http/proxy"] - m["NewConnection/http/direct"]
	printf "https:  added %5.0f µs per new connection   (goal <= 1000 µs)\n", m["NewConnection/https/proxy"] - m["NewConnection/https/direct"]
}'
