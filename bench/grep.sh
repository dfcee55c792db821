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

now() { date +%s%N; }

# median_ms CMD...: run CMD once to warm up, then RUNS times; print the median in ms.
median_ms() {
	"$@" >/dev/null 2>&1 || true
	local ts=()
	for ((i = 0; i < RUNS; i++)); do
		local s e
		s=$(now)
		"$@" >/dev/null 2>&1 || true
		e=$(now)
		ts+=($(((e - s) / 1000000)))
	done
	printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

json_escape() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }

warden_grep() { "$tmp/warden" tool call grep --workspace "$TREE" --mode yolo --args "$1"; }

printf 'tree: %s (%s files), runs: %s (median), cores: %s\n' "$TREE" "$(find "$TREE" -type f | wc -l)" "$RUNS" "$(nproc)"
printf '%-34s %8s %8s %8s %10s %11s %s\n' pattern warden_ms rg_ms grep_ms warden/rg warden/grep 'lines (warden/rg/grep)'
while IFS=$'\t' read -r pat ic; do
	args="{\"pattern\":\"$(json_escape "$pat")\",\"ignore_case\":$ic,\"max_results\":1000}"
	rgflags=(-n --no-config); grepflags=(-rnE)
	label=$pat
	if [[ $ic == true ]]; then rgflags+=(-i); grepflags+=(-i); label="$pat (ignore_case)"; fi
	# GNU grep -E has no \w-free spelling of every RE2 class; \w works in GNU grep.
	w=$(median_ms warden_grep "$args")
	r=$(median_ms rg "${rgflags[@]}" -e "$pat" "$TREE")
	g=$(median_ms grep "${grepflags[@]}" -e "$pat" "$TREE")
	out=$(warden_grep "$args" | sed 's/\\n/\n/g')
	wl=$(sed -n 's/.*(\([0-9]*\) matching lines in.*/\1/p' <<<"$out")
	[[ -n $wl ]] || wl=$(grep -cE '^[^[].*:[0-9]+: ' <<<"$out" || true)
	rl=$(rg "${rgflags[@]}" -e "$pat" "$TREE" | wc -l)
	gl=$(grep "${grepflags[@]}" -e "$pat" "$TREE" 2>/dev/null | grep -vc '^Binary file' || true)
	printf '%-34s %8s %8s %8s %10s %11s %s\n' "$label" "$w" "$r" "$g" \
		"$(awk -v a="$w" -v b="$r" 'BEGIN{printf "%.2f", a/b}')" \
		"$(awk -v a="$w" -v b="$g" 'BEGIN{printf "%.2f", a/b}')" "$wl/$rl/$gl"
done <<<"$PATTERNS"
