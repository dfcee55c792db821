#!/usr/bin/env bash
# Egress proxy benchmarks in one go: a jailed command's path (client →
# relay on loopback, which hands the socket to warden's egress server →
# origin) against the same client going straight to the origin, on
# loopback, alternately (direct, proxy, direct, …) so that the machine's
# load falls on both:
#   - 100 MB transfer, raw TCP through CONNECT (opaque) and as an HTTPS
#     download (ClientHello checked, then carried): throughput ratio
#     (the median of the per-pair ratios);
#   - 1,000 small requests, each on a new connection, plain HTTP
#     (absolute-form) and HTTPS (CONNECT + TLS): median per request each
#     way, and the proxy's added latency.
#   - the same as a program in a bubblewrap jail under network =
#     "allowlist" sees it (relay in the jail, gateway on the host) against
#     the program on the host: 100 MB and 1,000 new connections.
# Prints the median over COUNT runs.
#
#   bench/egress.sh              # COUNT=3
#   COUNT=5 RAW=/tmp/raw.txt bench/egress.sh
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-3}
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)  (2 shared cores: numbers move with the load)"
out=$(go test -run '^$' -bench '^Benchmark(Transfer|TransferHTTPS|NewConnection)$' -benchtime 1x -count "$COUNT" -timeout 30m ./internal/egress
	go test -run '^$' -bench '^BenchmarkEgressJail$' -benchtime 1x -count "$COUNT" -timeout 30m ./internal/sandbox)
echo "# load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${RAW:-}" ]; then echo "$out" > "$RAW"; fi
echo "$out" | awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (i = 3; i < NF; i++) if ($(i+1) ~ /^(direct|proxy|added|host|jail)-|ratio$/) v[name "/" $(i+1)] = v[name "/" $(i+1)] " " $i
}
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	printf "%-16s %12s %12s %14s %16s\n", "100 MB transfer", "direct MB/s", "proxy MB/s", "proxy/direct", "CPU ms d / p"
	split("Transfer TransferHTTPS", k, " ")
	for (i = 1; i <= 2; i++) printf "%-16s %12.0f %12.0f %13.2fx %9.0f / %-5.0f  (goal >= 0.8x)\n", k[i], median(v[k[i] "/direct-MB/s"]), median(v[k[i] "/proxy-MB/s"]), median(v[k[i] "/throughput-ratio"]), median(v[k[i] "/direct-cpu-ms"]), median(v[k[i] "/proxy-cpu-ms"])
	print ""
	printf "%-24s %12s %12s %12s %16s\n", "1,000 new connections", "direct µs", "proxy µs", "added µs", "added CPU µs"
	split("NewConnection/http NewConnection/https", c, " ")
	for (i = 1; i <= 2; i++) printf "%-24s %12.0f %12.0f %12.0f %16.0f   (goal <= 1000 µs)\n", c[i], median(v[c[i] "/direct-µs/req"]), median(v[c[i] "/proxy-µs/req"]), median(v[c[i] "/added-µs/req"]), median(v[c[i] "/added-cpu-µs/req"])
	if ("EgressJail/throughput-ratio" in v) {
		print ""
		print "a program in a jail under network = \"allowlist\" against the same on the host (bubblewrap):"
		printf "100 MB download:  host %.0f MB/s, jail %.0f MB/s, jail/host = %.2fx   (goal >= 0.8x)\n", median(v["EgressJail/host-MB/s"]), median(v["EgressJail/jail-MB/s"]), median(v["EgressJail/throughput-ratio"])
		printf "CPU per download: host: program %.0f + origin %.0f ms; jail: program and relay %.0f + origin and proxy %.0f ms\n", median(v["EgressJail/host-client-cpu-ms"]), median(v["EgressJail/host-origin-cpu-ms"]), median(v["EgressJail/jail-client-cpu-ms"]), median(v["EgressJail/jail-origin+proxy-cpu-ms"])
		printf "new connection:   host %.0f µs, jail %.0f µs, added %.0f µs   (goal <= 1000 µs)\n", median(v["EgressJail/host-µs/req"]), median(v["EgressJail/jail-µs/req"]), median(v["EgressJail/added-µs/req"])
	}
}'
