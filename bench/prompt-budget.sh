#!/usr/bin/env bash
# The prompt budget: how many calls of the recorded coding sessions in
# bench/prompt-budget/*.jsonl (12 sessions, Go, Python, JS/pnpm, Rust, docs,
# cleanup, git, an HTTP API, CI scripts) a person is asked about, per mode.
# Every call goes through warden's real engine (judge, guards, policy, the
# auto mode's check of a real bubblewrap jail) with Decide, which runs
# nothing; egress prompts are the hosts a session's jailed commands reach
# that [sandbox.egress] does not allow, once per host and session.
#
#   bench/prompt-budget.sh        # the table
#   bench/prompt-budget.sh -v     # and every prompt, per mode
set -euo pipefail
cd "$(dirname "$0")/.."
command -v bwrap >/dev/null || { echo "bench/prompt-budget.sh needs bubblewrap (the auto mode checks a real jail)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/promptbudget" ./bench/promptbudget
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/home/.config XDG_STATE_HOME=$tmp/home/.state
mkdir -p "$HOME"
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg) (counts do not depend on it)"
"$tmp/promptbudget" -corpus bench/prompt-budget "$@"
