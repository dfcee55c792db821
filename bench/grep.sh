#!/usr/bin/env bash
# grep.sh: wall time of warden's grep tool (through the whole engine, as
# `warden tool call grep`) against ripgrep and GNU grep -rn on the same
# patterns over the same tree, in one run. Each command runs RUNS times
# after one warm-up; the median is reported, with the ratios.
#
#   bench/grep.sh [TREE]        TREE defaults to $(go env GOROOT)/src
#   RUNS=9 bench/grep.sh
#
# Needs go, rg and GNU grep. Prints a table on stdout.
set -euo pipefail

cd "$(dirname "$0")/.."
TREE=${1:-$(go env GOROOT)/src}
RUNS=${RUNS:-5}
command -v rg >/dev/null || { echo "grep.sh: rg (ripgrep) is not installed" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/warden" ./cmd/warden
# A private config and state, so the user's settings and audit trail are untouched.
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/config XDG_STATE_HOME=$tmp/state XDG_DATA_HOME=$tmp/data XDG_CACHE_HOME=$tmp/cache
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME"

# pattern <TAB> ignore_case
PATTERNS=$(printf '%s\t%s\n' \
	'func main' false \
	'func \w+\(ctx context\.Context' false \
	'deadline exceeded' true \
	'TODO|FIXME|XXX' false \
	'[A-Z]{6,}_[0-9]+' false)

# medians CMD...: run CMD once to warm the page cache, then RUNS times;
# print the median wall time and the median CPU time (user+sys), in ms.
# CPU time is the steadier number on a machine that others are loading.
medians() {
	"$@" >/dev/null 2>&1 || true
	local walls=() cpus=() TIMEFORMAT='%R %U %S' t
	for ((i = 0; i < RUNS; i++)); do
		t=$({ time "$@" >/dev/null 2>&1; } 2>&1 | tail -1)
		walls+=("$(awk '{printf "%d", $1*1000}' <<<"$t")")
		cpus+=("$(awk '{printf "%d", ($2+$3)*1000}' <<<"$t")")
	done
	printf '%s %s\n' "$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" \
		"$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "-" }'; }

json_escape() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }

warden_grep() { "$tmp/warden" tool call grep --workspace "$TREE" --mode yolo --args "$1"; }

printf 'tree: %s (%s files), runs: %s (median), cores: %s, load: %s\n' "$TREE" "$(find "$TREE" -type f | wc -l)" "$RUNS" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %17s %17s %17s %11s %11s %s\n' pattern 'warden wall/cpu' 'rg wall/cpu' 'grep wall/cpu' 'w/rg wall' 'w/grep wall' 'lines (warden/rg/grep)'
while IFS=$'\t' read -r pat ic; do
	args="{\"pattern\":\"$(json_escape "$pat")\",\"ignore_case\":$ic,\"max_results\":1000}"
	rgflags=(-n --no-config); grepflags=(-rnE)
	label=$pat
	if [[ $ic == true ]]; then rgflags+=(-i); grepflags+=(-i); label="$pat (ignore_case)"; fi
	read -r ww wc < <(medians warden_grep "$args")
	read -r rw rc < <(medians rg "${rgflags[@]}" -e "$pat" "$TREE")
	read -r gw gc < <(medians grep "${grepflags[@]}" -e "$pat" "$TREE")
	out=$(warden_grep "$args" | sed 's/\\n/\n/g')
	wl=$(sed -n 's/.*(\([0-9]*\) matching lines in.*/\1/p' <<<"$out")
	[[ -n $wl ]] || wl=$(grep -cE '^[^[].*:[0-9]+: ' <<<"$out" || true)
	rl=$(rg "${rgflags[@]}" -e "$pat" "$TREE" | wc -l)
	gl=$(grep "${grepflags[@]}" -e "$pat" "$TREE" 2>/dev/null | grep -vc '^Binary file' || true)
	printf '%-34s %17s %17s %17s %11s %11s %s\n' "$label" "$ww/$wc ms" "$rw/$rc ms" "$gw/$gc ms" \
		"$(ratio "$ww" "$rw")" "$(ratio "$ww" "$gw")" "$wl/$rl/$gl"
done <<<"$PATTERNS"
