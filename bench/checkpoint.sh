#!/usr/bin/env bash
# checkpoint.sh: warden's checkpoints and undo against what a user would do
# instead, on the same tree in one run: commit everything to a scratch git
# repository (git add -A && git commit, restore with git checkout -f -- .),
# copy the tree (cp -a), or snapshot it with rsync (incremental with
# --link-dest). The Go benchmarks in internal/checkpoint do the work; this
# prints their medians, wall and CPU time (user + system: steadier on a
# loaded machine), and the ratios alternative / warden.
#
#   bench/checkpoint.sh                   10,000 files, 200 MB
#   FILES=2000 MB=40 COUNT=3 bench/checkpoint.sh
#
# Each benchmark runs COUNT times (default 3) and the median is shown.
# Warden's numbers are in-process (as inside warden's engine); the
# alternatives are the commands a user would run, process start included.
# Needs go, git, cp; rsync when installed.
set -euo pipefail
cd "$(dirname "$0")/.."
export WARDEN_BENCH_FILES=${FILES:-10000} WARDEN_BENCH_MB=${MB:-200}
COUNT=${COUNT:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/checkpoint.test" ./internal/checkpoint

printf 'tree: %s files, %s MB; count %s (median); cores: %s; load before: %s\n' \
	"$WARDEN_BENCH_FILES" "$WARDEN_BENCH_MB" "$COUNT" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"

# bench PATTERN BENCHTIME: run the benchmarks, keep "name ns/op [metrics]".
bench() {
	if ! (cd "$tmp" && TMPDIR=$tmp ./checkpoint.test -test.run '^$' -test.bench "$1" -test.benchtime "$2" -test.count "$COUNT" >"$tmp/out" 2>&1); then
		cat "$tmp/out" >&2
		echo "checkpoint.sh: $1 failed" >&2
		exit 1
	fi
	awk '/^Benchmark/ { sub(/-[0-9]+$/, "", $1); line = $1 " " $3; for (i = 5; i < NF; i += 2) line = line " " $(i+1) "=" $i; print line }' "$tmp/out" >>"$tmp/results"
}
bench '^BenchmarkFirstCheckpoint$' 1x
bench '^BenchmarkIncrementalCheckpoint$' 20x
bench '^BenchmarkUndoDeletion$' 3x
bench '^BenchmarkHundredCheckpoints$' 1x

# median NAME FIELD: the median of a field ("ns" or a metric) over the runs.
median() {
	awk -v n="$1" -v f="$2" '$1 == n { if (f == "ns") v = $2; else for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == f) v = kv[2] } print v }' "$tmp/results" |
		sort -g | awk '{a[NR] = $1} END { if (NR) print a[int((NR + 1) / 2)] }'
}
ms() { awk -v v="$1" 'BEGIN { if (v == "") print "-"; else printf "%.1f ms", v / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.1f×", a / b }'; }

printf '\n%-44s %12s %12s %10s %10s\n' 'operation' 'wall' 'cpu' 'wall/w' 'cpu/w'
for group in FirstCheckpoint IncrementalCheckpoint UndoDeletion HundredCheckpoints; do
	w=$(median "Benchmark$group/warden" ns)
	wc=$(median "Benchmark$group/warden" cpu-ms/op)
	for tool in $(awk -v g="Benchmark$group/" 'index($1, g) == 1 { sub(g, "", $1); print $1 }' "$tmp/results" | awk '!seen[$0]++'); do
		v=$(median "Benchmark$group/$tool" ns)
		c=$(median "Benchmark$group/$tool" cpu-ms/op)
		label="$group/$tool"
		[ "$group" = HundredCheckpoints ] && label="$group/$tool (per 100)"
		printf '%-44s %12s %9s ms %10s %10s\n' "$label" "$(ms "$v")" "$(awk -v c="$c" 'BEGIN { printf "%.1f", c }')" "$(ratio "$v" "$w")" "$(ratio "$c" "$wc")"
	done
done
printf '\n%-20s %14s %16s %16s\n' 'disk' 'first' 'after 100 more' 'the 100 cost'
for tool in warden git; do
	f=$(median "BenchmarkHundredCheckpoints/$tool" MiB-first)
	a=$(median "BenchmarkHundredCheckpoints/$tool" MiB-after-100)
	[ -n "$a" ] && printf '%-20s %10.1f MiB %12.1f MiB %12.1f MiB\n' "$tool" "$f" "$a" "$(awk -v a="$a" -v f="$f" 'BEGIN { print a - f }')"
done
printf '\nload after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
