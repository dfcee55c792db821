#!/usr/bin/env bash
# grep.sh: wall time of warden's grep tool (through the whole engine, as
# `warden tool call grep`) against ripgrep and GNU grep -rn on the same
# patterns over the same tree, in one run. After one warm-up each, the
# three commands run in turn RUNS times, each round starting with the
# next one; the medians of wall and CPU time
# are reported, with the ratios of both.
#
#   bench/grep.sh [TREE]        TREE defaults to $(go env GOROOT)/src
#   RUNS=9 bench/grep.sh
#   BASE=main bench/grep.sh     also time warden built from git revision
#                               BASE, in the same rounds: before and after
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
if [[ -n ${BASE:-} ]]; then
	mkdir "$tmp/base"
	git archive "$BASE" | tar -x -C "$tmp/base"
	(cd "$tmp/base" && go build -o "$tmp/warden-base" ./cmd/warden)
fi
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

# measure: one run of "$@", printed as "WALL CPU" in ms (CPU is user+sys,
# the steadier number on a machine that others are loading).
measure() {
	local TIMEFORMAT='%R %U %S' t
	t=$({ time "$@" >/dev/null 2>&1; } 2>&1 | tail -1) || true # rg and grep exit 1 on no match
	awk '{printf "%d %d\n", $1*1000, ($2+$3)*1000}' <<<"$t"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "-" }'; }

json_escape() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }

warden_grep() { "$tmp/warden" tool call grep --workspace "$TREE" --mode yolo --args "$1"; }
# The base keeps its own state: its audit store may have another schema.
base_grep() {
	XDG_STATE_HOME=$tmp/base-state XDG_DATA_HOME=$tmp/base-data XDG_CACHE_HOME=$tmp/base-cache \
		"$tmp/warden-base" tool call grep --workspace "$TREE" --mode yolo --args "$1"
}

printf 'tree: %s (%s files), runs: %s (median), cores: %s, load: %s\n' "$TREE" "$(find "$TREE" -type f | wc -l)" "$RUNS" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %17s %17s %17s %13s %13s %s\n' pattern 'warden wall/cpu' 'rg wall/cpu' 'grep wall/cpu' 'w/rg wall/cpu' 'w/grep wall/cpu' 'lines (warden/rg/grep)'
while IFS=$'\t' read -r pat ic; do
	args="{\"pattern\":\"$(json_escape "$pat")\",\"ignore_case\":$ic,\"max_results\":1000}"
	rgflags=(-n --no-config); grepflags=(-rnE)
	label=$pat
	if [[ $ic == true ]]; then rgflags+=(-i); grepflags+=(-i); label="$pat (ignore_case)"; fi
	# One warm-up each, then the three commands in turn, RUNS times, so that
	# a change in the machine's load falls on all three alike.
	warden_grep "$args" >/dev/null 2>&1 || true
	rg "${rgflags[@]}" -e "$pat" "$TREE" >/dev/null 2>&1 || true
	grep "${grepflags[@]}" -e "$pat" "$TREE" >/dev/null 2>&1 || true
	[[ -z ${BASE:-} ]] || base_grep "$args" >/dev/null 2>&1 || true
	: >"$tmp/w"; : >"$tmp/r"; : >"$tmp/g"; : >"$tmp/b"
	# Each round starts with the next command: the first of a round pays
	# for the file pages the kernel reclaimed since the last one and for a
	# load pulse, so no command may always be first.
	cmds=(w r g); [[ -z ${BASE:-} ]] || cmds+=(b)
	for ((i = 0; i < RUNS; i++)); do
		for ((j = 0; j < ${#cmds[@]}; j++)); do
			case ${cmds[(i + j) % ${#cmds[@]}]} in
			w) measure warden_grep "$args" >>"$tmp/w" ;;
			r) measure rg "${rgflags[@]}" -e "$pat" "$TREE" >>"$tmp/r" ;;
			g) measure grep "${grepflags[@]}" -e "$pat" "$TREE" >>"$tmp/g" ;;
			b) measure base_grep "$args" >>"$tmp/b" ;;
			esac
		done
	done
	ww=$(cut -d' ' -f1 "$tmp/w" | median); wc=$(cut -d' ' -f2 "$tmp/w" | median)
	rw=$(cut -d' ' -f1 "$tmp/r" | median); rc=$(cut -d' ' -f2 "$tmp/r" | median)
	gw=$(cut -d' ' -f1 "$tmp/g" | median); gc=$(cut -d' ' -f2 "$tmp/g" | median)
	out=$(warden_grep "$args" | sed 's/\\n/\n/g')
	wl=$(sed -n 's/.*(\([0-9]*\) matching lines in.*/\1/p' <<<"$out")
	[[ -n $wl ]] || wl=$(grep -cE '^[^[].*:[0-9]+: ' <<<"$out" || true)
	rl=$(rg "${rgflags[@]}" -e "$pat" "$TREE" | wc -l)
	gl=$(grep "${grepflags[@]}" -e "$pat" "$TREE" 2>/dev/null | grep -vc '^Binary file' || true)
	printf '%-34s %17s %17s %17s %13s %13s %s\n' "$label" "$ww/$wc ms" "$rw/$rc ms" "$gw/$gc ms" \
		"$(ratio "$ww" "$rw")/$(ratio "$wc" "$rc")" "$(ratio "$ww" "$gw")/$(ratio "$wc" "$gc")" "$wl/$rl/$gl"
	if [[ -n ${BASE:-} ]]; then
		bw=$(cut -d' ' -f1 "$tmp/b" | median); bc=$(cut -d' ' -f2 "$tmp/b" | median)
		printf '%-34s %17s %35s %13s %13s %s\n' "  warden at $BASE" "$bw/$bc ms" '' "$(ratio "$bw" "$rw")/$(ratio "$bc" "$rc")" \
			"$(ratio "$bw" "$gw")/$(ratio "$bc" "$gc")" "this/$BASE: $(ratio "$ww" "$bw")/$(ratio "$wc" "$bc")"
	fi
done <<<"$PATTERNS"
printf 'load after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
