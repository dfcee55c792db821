#!/usr/bin/env bash
# Sandbox benchmarks in one go: per-call latency of exec `true`, read_file
# 4 KiB and write_file 4 KiB through the persistent jailed worker, against
# the same unjailed (bare) and against a fresh bubblewrap jail per call;
# and the worker's cold start. The test binary is built once and run COUNT
# times (rounds); each round runs every benchmark once, so a change in the
# machine's load falls on worker and bare alike. Prints the medians and
# the median of the per-round ratios.
#
#   bench/sandbox.sh            # COUNT=5 BENCHTIME=300x
#   COUNT=9 BENCHTIME=1s RAW=/tmp/raw.txt bench/sandbox.sh   # RAW keeps the output
#   BASE=main bench/sandbox.sh  # also the test binary of git revision BASE,
#                               # in the same rounds (before and after)
#   LOADGEN=2 bench/sandbox.sh  # with 2 busy loops running on the side:
#                               # how the ratios move with the load
#   BENCH='^BenchmarkExecTrue$' bench/sandbox.sh   # only some benchmarks
#   CPU=1 bench/sandbox.sh      # also CPU time per exec `true` (perf stat's
#                               # task-clock of the whole tree: host, jail, worker,
#                               # commands), worker and bare, each round: the
#                               # steadier number on a loaded machine
#                               # (needs perf and BENCHTIME=Nx)
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
BENCHTIME=${BENCHTIME:-300x}
BENCH=${BENCH:-'^Benchmark(ExecTrue|ReadFile4K|WriteFile4K|ColdStart)$'}

tmp=$(mktemp -d)
loadpids=()
cleanup() {
	for p in "${loadpids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
go test -c -o "$tmp/after.test" ./internal/sandbox
bins=(after)
if [[ -n ${BASE:-} ]]; then
	mkdir "$tmp/base"
	git archive "$BASE" | tar -x -C "$tmp/base"
	(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./internal/sandbox)
	bins=(base after)
fi
for ((i = 0; i < ${LOADGEN:-0}; i++)); do
	bash -c 'while :; do :; done' &
	loadpids+=($!)
done

echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)  (2 shared cores: numbers move with the load; LOADGEN=${LOADGEN:-0} busy loops of ours)"
: >"$tmp/raw"
for ((r = 1; r <= COUNT; r++)); do
	for b in "${bins[@]}"; do
		# The tests run in the package directory, as go test runs them.
		(cd internal/sandbox && "$tmp/$b.test" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME" -test.count 1) |
			awk -v b="$b" -v r="$r" '/^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name); print b, r, name, $3 }' >>"$tmp/raw"
	done
done
# cpu BIN SUB N: CPU ms of a run of ExecTrue/SUB with N calls, every
# descendant included (perf stat's task-clock follows them into the jail;
# rusage would lose what the jail's init does not reap).
cpu() {
	(cd internal/sandbox && perf stat -x, -e task-clock -o "$tmp/perf" "$tmp/$1.test" -test.run '^$' \
		-test.bench "^BenchmarkExecTrue\$/^$2\$" -test.benchtime "${3}x" -test.count 1 >/dev/null)
	awk -F, '$3 == "task-clock" {printf "%d\n", $1 * 1000}' "$tmp/perf" # µs
}
if [[ -n ${CPU:-} ]]; then
	n=${BENCHTIME%x}
	[[ $n =~ ^[0-9]+$ && $n -gt 1 ]] || { echo "CPU=1 needs BENCHTIME=Nx" >&2; exit 1; }
	command -v perf >/dev/null || { echo "CPU=1 needs perf (apt-get install linux-perf)" >&2; exit 1; }
	for ((r = 1; r <= COUNT; r++)); do
		for b in "${bins[@]}"; do
			for sub in worker bare; do
				# One call alone, then N: the difference is N-1 calls without
				# the start (process, jail, worker).
				c1=$(cpu "$b" "$sub" 1)
				cn=$(cpu "$b" "$sub" "$n")
				echo "$b $r CPU/$sub $(((cn - c1) * 1000 / (n - 1)))" >>"$tmp/raw"
			done
		done
	done
fi
echo "# load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n ${RAW:-} ]]; then cp "$tmp/raw" "$RAW"; fi
awk -v base="${BASE:-}" '
{ v[$1, $3, $2] = $4; bins[$1] = 1; rounds[$2] = 1 }
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (n == 0) return 0
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# med(b, k): median over rounds of benchmark k of binary b.
function med(b, k,   s, r) { s = ""; for (r in rounds) if ((b, k, r) in v) s = s " " v[b, k, r]; return median(s) }
# rmed(b, k1, k2): median over rounds of k1/k2, both of binary b.
function rmed(b, k1, k2,   s, r) { s = ""; for (r in rounds) if ((b, k1, r) in v && v[b, k2, r] > 0) s = s " " v[b, k1, r] / v[b, k2, r]; return median(s) }
# xmed(k): median over rounds of after/base for benchmark k.
function xmed(k,   s, r) { s = ""; for (r in rounds) if (("after", k, r) in v && v["base", k, r] > 0) s = s " " v["after", k, r] / v["base", k, r]; return median(s) }
function us(ns) { return sprintf("%10.1f µs", ns / 1000) }
END {
	n = split("ExecTrue/worker ExecTrue/bare ExecTrue/bwrap-per-call CPU/worker CPU/bare ReadFile4K/worker ReadFile4K/bare WriteFile4K/worker WriteFile4K/bare ColdStart", keys, " ")
	printf "%-30s %14s", "benchmark (median)", "per call"
	if (base != "") printf " %14s %10s", "at " base, "÷ " base
	printf "\n"
	for (i = 1; i <= n; i++) {
		if (med("after", keys[i]) == 0) continue
		printf "%-30s %s", keys[i], us(med("after", keys[i]))
		if (base != "") printf " %s %10.2f", us(med("base", keys[i])), xmed(keys[i])
		printf "\n"
	}
	print "\nmedians of the per-round ratios:"
	split("after" (base != "" ? " base" : ""), bl, " ")
	for (j in bl) {
		b = bl[j]
		tag = (b == "base") ? " (" base ")" : ""
		if (rmed(b, "ExecTrue/worker", "ExecTrue/bare") > 0)
			printf "exec true:   worker / bare           = %5.2fx   (goal <= 1.2x)%s\n", rmed(b, "ExecTrue/worker", "ExecTrue/bare"), tag
		if (rmed(b, "CPU/worker", "CPU/bare") > 0)
			printf "exec true:   worker / bare, CPU time = %5.2fx   (goal <= 1.2x)%s\n", rmed(b, "CPU/worker", "CPU/bare"), tag
		if (rmed(b, "ExecTrue/bwrap-per-call", "ExecTrue/worker") > 0)
			printf "exec true:   bwrap-per-call / worker = %5.2fx   (goal >= 5x)%s\n", rmed(b, "ExecTrue/bwrap-per-call", "ExecTrue/worker"), tag
		if (rmed(b, "ReadFile4K/worker", "ReadFile4K/bare") > 0)
			printf "read 4 KiB:  worker / bare           = %5.2fx   (goal: worker median < 200 µs: %s)%s\n", rmed(b, "ReadFile4K/worker", "ReadFile4K/bare"), us(med(b, "ReadFile4K/worker")), tag
		if (rmed(b, "WriteFile4K/worker", "WriteFile4K/bare") > 0)
			printf "write 4 KiB: worker / bare           = %5.2fx   (goal: worker median < 200 µs: %s)%s\n", rmed(b, "WriteFile4K/worker", "WriteFile4K/bare"), us(med(b, "WriteFile4K/worker")), tag
	}
	if (med("after", "ColdStart") > 0) printf "cold start:  %s\n", us(med("after", "ColdStart"))
}' "$tmp/raw"
