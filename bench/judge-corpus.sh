#!/usr/bin/env bash
# The command judge's corpora (internal/shellpolicy/testdata) judged by two
# versions of the judge: BASE (a git revision, default main) and the working
# tree, each called as warden calls it (BASE with the user's lists only; the
# working tree with the runner's environment allowlist, on the host and in
# the jail). Prints the false-ask rate on the benign corpus (rows that must
# be safe, judged otherwise) and what each attack row got, before and after.
# OUT=file also writes every row's result as Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${BASE:-main}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/old"
git archive "$base" | tar -x -C "$tmp/old"
mkdir -p "$tmp/old/bench/judgecorpus"
cp bench/judgecorpus/main.go bench/judgecorpus/compare.go "$tmp/old/bench/judgecorpus/"
cat > "$tmp/old/bench/judgecorpus/opts.go" <<'GO'
package main

import "github.com/wardenhq/warden/internal/shellpolicy"

// The judge before issue 13 had no environment allowlist and no jail mode.
func judgeOptions(jailed bool) *shellpolicy.Options {
	if jailed {
		return nil
	}
	return &shellpolicy.Options{}
}
GO
go build -o "$tmp/new-judge" ./bench/judgecorpus
(cd "$tmp/old" && go build -o "$tmp/old-judge" ./bench/judgecorpus)
out=${OUT:-/dev/null}
{
	echo "# The command judge's corpora, before ($base $(git rev-parse --short "$base")) and after"
	echo
	echo "Written by \`OUT=bench/judge_corpus_results.md bench/judge-corpus.sh\`; the summary is in BENCHMARKS.md."
	echo "\"before\" is the judge of $base called as warden called it (no environment, no jail); \"after\""
	echo "is this tree's, with the runner's environment allowlist, on the host and in the jail. A"
	echo "decision is \`deny:RULE\` (blocked in every mode) or the class (safe runs unasked where the"
	echo "mode allows; dev and dangerous are asked)."
	echo
} > "$out"
for kind in benign attacks; do
	corpus=$PWD/internal/shellpolicy/testdata/$kind.jsonl
	"$tmp/old-judge" -corpus "$corpus" > "$tmp/old-$kind.jsonl"
	"$tmp/new-judge" -corpus "$corpus" > "$tmp/new-$kind.jsonl"
	echo "== $kind (before: $base $(git rev-parse --short "$base"), after: working tree)"
	"$tmp/new-judge" -compare "$kind" "$tmp/old-$kind.jsonl" "$tmp/new-$kind.jsonl" > "$tmp/cmp-$kind.md"
	sed '/^$/q' "$tmp/cmp-$kind.md"
	{ echo "## $kind"; echo; cat "$tmp/cmp-$kind.md"; echo; } >> "$out"
done
