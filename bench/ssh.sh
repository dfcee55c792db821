#!/usr/bin/env bash
# ssh backend benchmark in one go: per-call latency of `true` on a remote
# host through the persistent ssh worker (jailed there) against a new ssh
# session per call on one open connection, a new x/crypto/ssh connection
# per call, and the OpenSSH client per call (`ssh host true`); and the ssh
# worker's cold start. The benchmark starts its own sshd on 127.0.0.1 (root,
# throwaway keys, as the tests do); it needs root, openssh-server,
# openssh-client and bubblewrap. worker-ping is the worker protocol's round
# trip over the connection, without starting a process. Prints the median of COUNT runs and ratios.
#
#   bench/ssh.sh                 # COUNT=3 BENCHTIME=30x
#   COUNT=9 BENCHTIME=100x RAW=/tmp/raw.txt bench/ssh.sh   # RAW keeps go test output
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-3}
BENCHTIME=${BENCHTIME:-30x}
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)  (2 shared cores: numbers move with the load)"
out=$(go test -run '^$' -bench '^BenchmarkSSHExecTrue$' -benchtime "$BENCHTIME" -count "$COUNT" ./internal/sandbox)
echo "# load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${RAW:-}" ]; then echo "$out" > "$RAW"; fi
echo "$out" | awk '
/^BenchmarkSSHExecTrue\// {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^BenchmarkSSHExecTrue\//, "", name)
	v[name] = v[name] " " $3
}
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function ms(ns) { return sprintf("%9.2f ms", ns / 1e6) }
END {
	for (k in v) m[k] = median(v[k])
	printf "%-28s %s\n", "exec true (median)", "per call"
	n = split("worker worker-ping session-per-call xcrypto-conn-per-call openssh-per-call worker-cold-start", keys, " ")
	for (i = 1; i <= n; i++) printf "%-28s %s\n", keys[i], ms(m[keys[i]])
	print ""
	printf "session per call      / worker = %6.1fx\n", m["session-per-call"] / m["worker"]
	printf "x/crypto conn per call / worker = %6.1fx\n", m["xcrypto-conn-per-call"] / m["worker"]
	printf "ssh host true per call / worker = %6.1fx\n", m["openssh-per-call"] / m["worker"]
}'
